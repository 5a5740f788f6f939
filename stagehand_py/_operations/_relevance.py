"""Lexical relevance of page text to an instruction: which chunk (or choice) to send first.

A lookup names what it looks for: a row's label ("Widget 4321"), a quoted phrase, a number.
Those literal values tell page parts apart far better than the words around them, so they
weigh most: a quoted phrase found whole in a chunk, and words holding a digit, count triple.
Hints (a schema's field names) weigh half: a table's header names them once, its rows never.

An element's meaning often lies in its section, not its name: Django's filter links are
"All", "Yes", "No" under "By in stock" under "Filter". :func:`sections` gives each element
the labels that give it meaning (its named ancestors, and a heading or button just before a
group it is in), and for element questions (observe, act) a part is ranked by its best element
read with its section (:func:`rank_chunks` with ``elements=True``), as the choices are.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from ..snapshot import OutlineChunk, SnapshotElement, parse_line

__all__ = ["claim_score", "closing_toggles", "element_score", "rank_chunks", "ranking_terms", "sections", "terms"]

_WORD = re.compile(r"[a-z0-9]+")
# Words every instruction uses: they say what to do, not where on the page.
_STOP = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "into", "is", "it", "of", "on", "or", "the",
     "this", "that", "to", "with", "click", "type", "fill", "press", "select", "enter", "find", "get", "all", "any",
     "page", "element", "elements", "button", "field", "extract", "what", "which", "its", "their", "value", "values"]
)
# "Go to page 2", "go to the next page": "go" says to navigate, it names no element (a "Go"
# button is named by "click Go").
_GO_TO = re.compile(r"\bgo(?=\s+to\b)")
_QUOTED = re.compile(r"""["'“‘]([^"'”’]{2,80})["'”’]""")
_IDS = re.compile(r"\[\d+-\d+\]")
_LITERAL_WEIGHT = 3.0
_HINT_WEIGHT = 0.5
# An instruction that says where on the page the value is.
_WHERE = re.compile(r"\b(?:at|in|near) the (top|beginning|start|header|bottom|end|footer)\b", re.IGNORECASE)
_END_WORDS = frozenset({"bottom", "end", "footer"})


#: How a page writes what an instruction says with a negation: "not in stock" is the "No" of a
#: yes/no filter.
_ALIASES = {"not": ("no",), "without": ("no",), "non": ("no",)}
#: Lines whose name labels the group that follows them (a disclosure's button, a heading).
_LABELS = frozenset({"heading", "button", "columnheader", "rowheader", "legend", "caption", "tab"})
#: At most this many labels per element (nearest first): enough to say where it is.
_MAX_LABELS = 2


def terms(text: str) -> list[str]:
    """The words of ``text`` that can tell page parts apart (lower case, no stop words, no
    single characters)."""
    return [w for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in _STOP]


def ranking_terms(text: str) -> list[str]:
    """:func:`terms` for ranking an element question's parts and choices: a single digit is a
    literal too (the "2" of "go to page 2", the "No"'s page link), and "go to" names no element."""
    return [w for w in _WORD.findall(_GO_TO.sub(" ", text.lower())) if (len(w) > 1 or w.isdigit()) and w not in _STOP]


def _walk(lines: Sequence[str]) -> list[tuple[SnapshotElement | None, tuple[str, ...], tuple[str, ...]]]:
    """Per outline line: its element, its section labels (see :func:`sections`) and the ids of the
    open disclosures' toggles whose group it is in, nearest first (see :func:`closing_toggles`)."""
    out: list[tuple[SnapshotElement | None, tuple[str, ...], tuple[str, ...]]] = []
    # The open ancestors: (record, labels, toggles) they pass on to their descendants.
    stack: list[tuple[SnapshotElement, tuple[str, ...], tuple[str, ...]]] = []
    previous: dict[int, SnapshotElement] = {}  # the last element seen at each depth
    for line in lines:
        element = parse_line(line)
        if element is None:
            out.append((None, (), ()))
            continue
        while stack and stack[-1][0].depth >= element.depth:
            stack.pop()
        for depth in [d for d in previous if d > element.depth]:
            del previous[depth]
        parent, inherited, toggles = stack[-1] if stack else (None, (), ())
        labels = tuple(label for label in dict.fromkeys(inherited) if label != element.name)[:_MAX_LABELS]
        out.append((element, labels, toggles))
        own: list[str] = []
        before = previous.get(element.depth)
        if before is not None and before.role in _LABELS and before.name and element.role not in _LABELS:
            own.append(before.name)
            if before.actionable and "expanded" in (*before.flags, *(parent.flags if parent else ())):
                toggles = (before.id, *toggles)  # an open disclosure: its summary, then the group it shows
        if element.name:
            own.append(element.name)
        stack.append((element, (*reversed(own), *inherited)[: _MAX_LABELS + 2], toggles))
        previous[element.depth] = element
    return out


def sections(lines: Sequence[str]) -> list[tuple[SnapshotElement | None, tuple[str, ...]]]:
    """Per outline line, its element (None for a non-element line) and the labels that give it
    meaning, nearest first: the names of its ancestors and of a heading or button line just
    before one of them (``link: No`` -> ``("By in stock", "Filter")``)."""
    return [(element, labels) for element, labels, _ in _walk(lines)]


def closing_toggles(lines: Sequence[str], instruction: str | None) -> set[str]:
    """Ids of open disclosures' toggles (a ``<summary>``, a button ``[expanded]``) that an act on
    ``instruction`` should not be offered: all of them when the instruction names an actionable
    element inside an open group, by a word of that element's own name its group's toggle lacks
    ("not in stock": the "No" under "By in stock"). The instruction then asks for a value, not a
    group; an open group's toggle could only close it, and a small model picks one for the words
    the toggles share with the instruction ("filter" for every group of a filter sidebar)."""
    wanted = ranking_terms(instruction or "")
    if not wanted:
        return set()
    walked = _walk(lines)
    names = {element.id: element.name for element, _, _ in walked if element is not None}
    toggles_seen: set[str] = set()
    value_named = False
    for element, _, toggles in walked:
        if element is None or not toggles:
            continue
        toggles_seen.update(toggles)
        if not element.actionable or value_named:
            continue
        named = [term for term in wanted if _matches(term, set(ranking_terms(element.name)))]
        value_named = any(not _matches(term, set(ranking_terms(names[toggles[0]]))) for term in named)
    return toggles_seen if value_named else set()


def _matches(term: str, words: set[str]) -> bool:
    wanted = (term, *_ALIASES.get(term, ()))
    return any(w == t or (len(t) > 2 and (w.startswith(t) or t.startswith(w)) and len(w) > 2)
               for t in wanted for w in words)


def element_score(element: SnapshotElement, labels: Sequence[str], weights: dict[str, float]) -> float:
    """How much of the instruction (``weights``: term -> weight) an element answers, read with its
    section's labels: each term counted once, on the name or the labels. An element the
    instruction names whole (every word of its name asked for: the "2" of "go to page 2") counts
    double, above one whose longer name merely contains those words ("Harbor 2")."""
    words = set(ranking_terms(" ".join((element.role, element.name, *labels))))
    score = sum(weight for term, weight in weights.items() if _matches(term, words))
    own = ranking_terms(element.name)
    if own and score and all(any(_matches(term, {word}) for term in weights) for word in own):
        score *= 2
    return score


_NUMBER = re.compile(r"\d+")


def claim_score(text: str, claim: str) -> float:
    """How much of ``claim`` one line of text bears on: each of its words found in ``text`` once,
    numbers (even one digit: "2 items") triple and only whole ("2" is not "20")."""
    words = set(terms(text)) | set(_NUMBER.findall(text))
    wanted: dict[str, float] = {t: 1.0 for t in terms(claim) if not t.isdigit()}
    wanted.update(dict.fromkeys(_NUMBER.findall(claim), _LITERAL_WEIGHT))
    return sum(weight for term, weight in wanted.items()
               if (term in words if term.isdigit() else _matches(term, words)))


def _pattern(term: str) -> re.Pattern[str]:
    # A word with a digit is a literal value: "4321" must not match "43210". Other words match
    # as prefixes ("price" finds "prices").
    end = r"\b" if any(c.isdigit() for c in term) else ""
    return re.compile(rf"\b{re.escape(term)}{end}")


def _best_element(chunk: OutlineChunk, weights: dict[str, float]) -> float:
    return max((element_score(element, labels, weights) for element, labels in sections(chunk.text.split("\n"))
                if element is not None and element.actionable), default=0.0)


def rank_chunks(chunks: Sequence[OutlineChunk], instruction: str | None, *, hints: str = "",
                elements: bool = False) -> list[OutlineChunk]:
    """Chunks by lexical relevance to ``instruction`` (TF-IDF over words, literal values first;
    ``hints`` weigh less), best first.

    ``elements`` (observe, act: the answer is one element of the part): the part with the
    actionable element that, read with its section, answers most of the instruction goes first;
    TF-IDF orders parts whose best elements answer as much.

    Ties, and every chunk when nothing useful is named, keep page order. An instruction that
    says where ("at the top", "at the bottom of the page", "in the footer") orders the parts
    from that end; only parts holding a quoted literal of the instruction go before.
    """
    if len(chunks) <= 1:
        return list(chunks)
    weights: dict[str, float] = {t: _HINT_WEIGHT for t in ranking_terms(hints)}
    for term in ranking_terms(instruction or ""):
        weights[term] = _LITERAL_WEIGHT if any(c.isdigit() for c in term) else 1.0
    phrases = {" ".join(p.lower().split()) for p in _QUOTED.findall(instruction or "")}
    if not weights and not phrases:
        return list(chunks)
    # Element ids ("[0-1234]") are numbers too: out, or "1234" would find every part.
    texts = [" ".join(_IDS.sub(" ", chunk.text.lower()).split()) for chunk in chunks]
    counted = [{t: c for t in weights if (c := len(_pattern(t).findall(text)))} for text in texts]
    n = len(chunks)
    df = {t: sum(1 for c in counted if t in c) for t in weights}
    idf = {t: math.log(1 + n / (1 + df[t])) for t in weights}
    scores = [sum(math.log(1 + c) * idf[t] * weights[t] for t, c in found.items()) for found in counted]
    literal = [0.0] * n
    for phrase in phrases:
        whole = re.compile(rf"(?<!\w){re.escape(phrase)}(?!\w)")
        holders = [i for i, text in enumerate(texts) if whole.search(text)]
        for i in holders:
            literal[i] += _LITERAL_WEIGHT * math.log(1 + n / len(holders))
    scores = [score + bonus for score, bonus in zip(scores, literal, strict=True)]
    where = _WHERE.search(instruction or "")
    if where is not None:
        # The instruction says where the value is: that end of the page first, whatever words
        # the other parts share with it; only a part holding a quoted literal goes before.
        from_end = where.group(1).lower() in _END_WORDS
        order = sorted(range(n), key=lambda i: (-literal[i], -i if from_end else i))
    elif elements:
        best = [_best_element(chunk, {t: idf[t] * w for t, w in weights.items()}) for chunk in chunks]
        order = sorted(range(n), key=lambda i: (-literal[i], -round(best[i], 6), -scores[i], i))
    else:
        order = sorted(range(n), key=lambda i: (-scores[i], i))
    return [chunks[i] for i in order]
