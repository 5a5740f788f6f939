"""Lexical relevance of page text to an instruction: which chunk (or choice) to send first."""

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
     "page", "element", "elements", "button", "field"]
)


def terms(text: str) -> list[str]:
    """The words of ``text`` that can tell page parts apart (lower case, no stop words)."""
    return [w for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in _STOP]


def rank_chunks(chunks: Sequence[OutlineChunk], instruction: str | None) -> list[OutlineChunk]:
    """Chunks by lexical relevance to ``instruction`` (TF-IDF over words), best first.

    Ties, and every chunk when the instruction has no useful word, keep page order, so the
    top of the page wins when nothing else decides.
    """
    wanted = set(terms(instruction or ""))
    if not wanted or len(chunks) <= 1:
        return list(chunks)
    counted = [{t: c for t in wanted if (c := len(re.findall(rf"\b{re.escape(t)}", chunk.text.lower())))}
               for chunk in chunks]
    n = len(chunks)
    df = {t: sum(1 for c in counted if t in c) for t in wanted}
    idf = {t: math.log(1 + n / (1 + df[t])) for t in wanted}
    scores = [sum(math.log(1 + c) * idf[t] for t, c in found.items()) for found in counted]
    order = sorted(range(n), key=lambda i: (-scores[i], i))
    return [chunks[i] for i in order]
