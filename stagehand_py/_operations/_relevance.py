"""Lexical relevance of page text to an instruction: which chunk (or choice) to send first.

A lookup names what it looks for: a row's label ("Widget 4321"), a quoted phrase, a number.
Those literal values tell page parts apart far better than the words around them, so they
weigh most: a quoted phrase found whole in a chunk, and words holding a digit, count triple.
Hints (a schema's field names) weigh half: a table's header names them once, its rows never.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from ..snapshot import OutlineChunk

__all__ = ["rank_chunks", "terms"]

_WORD = re.compile(r"[a-z0-9]+")
# Words every instruction uses: they say what to do, not where on the page.
_STOP = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "into", "is", "it", "of", "on", "or", "the",
     "this", "that", "to", "with", "click", "type", "fill", "press", "select", "enter", "find", "get", "all", "any",
     "page", "element", "elements", "button", "field", "extract", "what", "which", "its", "their", "value", "values"]
)
_QUOTED = re.compile(r"""["'“‘]([^"'”’]{2,80})["'”’]""")
_LITERAL_WEIGHT = 3.0
_HINT_WEIGHT = 0.5
# An instruction that says where the value is: ties then go to the end of the page.
_AT_THE_END = re.compile(r"\b(bottom|footer|last|end)\b", re.IGNORECASE)


def terms(text: str) -> list[str]:
    """The words of ``text`` that can tell page parts apart (lower case, no stop words)."""
    return [w for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in _STOP]


def _pattern(term: str) -> re.Pattern[str]:
    # A word with a digit is a literal value: "4321" must not match "43210". Other words match
    # as prefixes ("price" finds "prices").
    end = r"\b" if any(c.isdigit() for c in term) else ""
    return re.compile(rf"\b{re.escape(term)}{end}")


def rank_chunks(chunks: Sequence[OutlineChunk], instruction: str | None, *, hints: str = "") -> list[OutlineChunk]:
    """Chunks by lexical relevance to ``instruction`` (TF-IDF over words, literal values first;
    ``hints`` weigh less), best first.

    Ties, and every chunk when nothing useful is named, keep page order (the end of the page
    first when the instruction says bottom, footer, last or end).
    """
    if len(chunks) <= 1:
        return list(chunks)
    weights: dict[str, float] = {t: _HINT_WEIGHT for t in terms(hints)}
    for term in terms(instruction or ""):
        weights[term] = _LITERAL_WEIGHT if any(c.isdigit() for c in term) else 1.0
    phrases = {" ".join(p.lower().split()) for p in _QUOTED.findall(instruction or "")}
    if not weights and not phrases:
        return list(chunks)
    texts = [" ".join(chunk.text.lower().split()) for chunk in chunks]
    counted = [{t: c for t in weights if (c := len(_pattern(t).findall(text)))} for text in texts]
    n = len(chunks)
    df = {t: sum(1 for c in counted if t in c) for t in weights}
    idf = {t: math.log(1 + n / (1 + df[t])) for t in weights}
    scores = [sum(math.log(1 + c) * idf[t] * weights[t] for t, c in found.items()) for found in counted]
    for phrase in phrases:
        whole = re.compile(rf"(?<!\w){re.escape(phrase)}(?!\w)")
        holders = [i for i, text in enumerate(texts) if whole.search(text)]
        for i in holders:
            scores[i] += _LITERAL_WEIGHT * math.log(1 + n / len(holders))
    from_end = bool(_AT_THE_END.search(instruction or ""))
    order = sorted(range(n), key=lambda i: (-scores[i], -i if from_end else i))
    return [chunks[i] for i in order]
