"""Choice-mode extract's page parts: sized by what a request shows, and cut between groups.

A plain-schema extract shows the page's outline, so its parts are cut from the outline by the
outline's size (:func:`._pipeline.split_page`). A choice-mode request shows the page's numbered
lines instead (on a data page about 40% of the outline's tokens: no ids, roles or indents), and
its answer schema offers each line's answers (:func:`._extract_lines.line_choices`). Parts cut by
the outline's size, a third of the budget each (the cut observe and act use, where choices repeat
an outline), were about a fifth of what a request could carry: Datasette's table page (410 lines)
was 7 parts, its genre facet cut after 'Poetry', and the embedded model, shown the first part,
answered three genres of five, said the instruction satisfied, and the rest was never read.

So here a part is as many lines as fit ``room`` tokens with their answers (each line's cost:
the line as shown and its answers at :data:`SIZING_DETAIL`; the question then offers the richest
detail that fits, :func:`.extract._choice_question`), and parts follow the page's groups (every
element with children: a block, a list, a table, a row, an item). Where a part must end, it ends
before the outermost group open at the line that does not fit that started inside the part and
either fits a part whole or leaves the part at least half full: that group starts the next part
(cut the same way between its own groups, a table between its rows, when it is bigger than a
part). So a list that fits one part is never cut, and a part does not end with the first rows of
the table that follows the facets: the embedded model, shown Datasette's facets with eight table
rows after them, gave no valid answer in three tries (622 s). Only where no such group is open
is a part cut at the line that does not fit.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..snapshot import OutlineChunk, estimate_tokens, parse_line
from ._extract_lines import ChoiceKind, PageLine, line_choices
from ._pipeline import PageParts
from ._relevance import rank_chunks

__all__ = ["SIZING_DETAIL", "LineParts", "line_cost", "line_parts"]

#: The answers' detail a part is sized for (:func:`~._extract_lines.line_choices`): each part of a
#: line between separators, not every run of words (on Datasette's books page, 811 text answers
#: for the whole page instead of 1,278).
SIZING_DETAIL = 1
#: Characters an answer adds to a schema shown as text beyond its own JSON (indent, comma, line break).
_PER_ANSWER = 12


def line_cost(line: PageLine, kinds: Sequence[ChoiceKind], *, detail: int = SIZING_DETAIL) -> int:
    """Tokens ``line`` adds to a request: the line as shown, and each answer it offers a field of
    each kind in ``kinds`` (as a schema in the prompt would carry them)."""
    chars = len(line.shown) + 1
    for kind in kinds:
        chars += sum(len(json.dumps(answer, ensure_ascii=False)) + _PER_ANSWER
                     for answer, meant in line_choices([line], kind, detail=detail).items() if meant is not None)
    return estimate_tokens("x" * chars)


@dataclass(frozen=True)
class LineParts:
    """The page's parts (best first, as :class:`~._pipeline.PageParts`) and each part's lines."""

    parts: PageParts
    #: Chunk index -> the lines that part shows, in page order.
    lines: dict[int, list[PageLine]]


def _groups(outline: list[str], lines: list[PageLine]) -> tuple[list[list[tuple[int, int]]], list[int]]:
    """Per page line, the groups it is inside, outermost first, each as (its first page line, one
    past its last); and each line's index in ``outline``."""
    at = {line.element_id: i for i, line in enumerate(lines)}
    where = [0] * len(lines)
    open_: list[tuple[int, int, int]] = []  # (depth, outline index, first page line) of each open element
    ends: dict[int, int] = {}  # outline index of an element -> one past its last page line
    inside: list[list[tuple[int, int]]] = [[] for _ in lines]  # per line: (outline index, first line) of its groups
    seen = 0  # page lines met so far
    for index, text in enumerate(outline):
        element = parse_line(text)
        if element is None:
            continue
        while open_ and element.depth <= open_[-1][0]:
            ends[open_.pop()[1]] = seen
        number = at.get(element.id)
        if number is not None:
            where[number] = index
            seen = max(seen, number + 1)
            inside[number] = [(opened, first) for _, opened, first in open_]
        open_.append((element.depth, index, seen))
    ends.update((opened, seen) for _, opened, _ in open_)
    return [[(first, ends[opened]) for opened, first in groups] for groups in inside], where


def line_parts(outline: str, lines: list[PageLine], cost: Callable[[PageLine], int], *, room: int,
               rank_by: str | None, hints: str = "") -> LineParts:
    """``lines`` (of ``outline``) in parts of at most ``room`` tokens by ``cost`` (a part holds one
    line at least), cut before a group that started in the part (see the module docstring);
    each part a :class:`~stagehand_py.snapshot.OutlineChunk` of the outline lines it covers, for
    ranking by relevance to ``rank_by`` and ``hints``."""
    text = outline.split("\n")
    if not lines:
        chunk = OutlineChunk(0, outline, estimate_tokens(outline), 0, max(len(text) - 1, 0), 0)
        return LineParts(PageParts([chunk], 1, choice=True), {0: []})
    costs = [cost(line) for line in lines]
    groups, where = _groups(text, lines)
    cuts: list[int] = [0]
    used = i = 0
    while i < len(lines):
        start = cuts[-1]
        if i == start or used + costs[i] <= room:
            used += costs[i]
            i += 1
            continue
        # Before the outermost group that started in the part and either leaves the part half
        # full or fits a part whole; else at the line that does not fit.
        cuts.append(next((first for first, end in groups[i] if start < first < i
                          and (sum(costs[start:first]) * 2 >= room or sum(costs[first:end]) <= room)), i))
        used = sum(costs[cuts[-1]:i])  # line i is weighed again, against the new part
    ends = [*cuts[1:], len(lines)]
    chunks: list[OutlineChunk] = []
    shown: dict[int, list[PageLine]] = {}
    for n, (first, end) in enumerate(zip(cuts, ends, strict=True)):
        # The outline lines from just after the previous part's last line to this part's last
        # one (the last part to the outline's end): its structure lines rank with it.
        begin = 0 if n == 0 else where[first - 1] + 1
        stop = len(text) - 1 if end == len(lines) else max(where[end - 1], begin)
        body = "\n".join(text[begin:stop + 1])
        chunks.append(OutlineChunk(n, body, estimate_tokens(body), begin, stop, 0))
        shown[n] = lines[first:end]
    ranked = rank_chunks(chunks, rank_by, hints=hints)
    return LineParts(PageParts(ranked, len(chunks), choice=True), shown)
