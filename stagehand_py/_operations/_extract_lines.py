"""The page as numbered text lines, and what a choice-mode extract may answer with each.

Choice-mode extract (:mod:`._extract_choice`) does not let the model write values: it shows the
page's text lines, numbered, and the model answers each field with a line (copied, ending with
its ``[number]``). The library then takes the value from that line. This module makes both
halves: :func:`page_lines` (the lines, from the outline) and :func:`line_choices` (every answer a
field of each kind may give, mapped to its line and value).

**The lines.** One per outline element that holds text: static text, a cell, a link, a heading,
a button, a field's value. Structure without words of its own (body, lists, rows, landmarks) is
left out. A table cell carries its column header (``population: 3,878,100``), and what is inside
a cell (a link) carries it too, in place of the cell; a description list's value carries its
term (``Pages: 412``). A role other than plain text or a cell is said (``link: Dune``,
``Title (link): Dune``). Lines are numbered in page order, 1 first.

**The answers** (the enums of the answer schema), each ending with the line's ``[number]``:

- text: the line as shown, its words alone, and, so that a value that is part of a line is
  read as written, each part of it between separators (``: `` ``, `` `` | `` ``. `` brackets,
  dashes) and each part's leading and trailing runs of words (``Frank Herbert [7]`` from
  ``by Frank Herbert``); the value is those words as the page writes them;
- number / integer: each number the line's words hold, as written (``1,291 [4]``); the value
  is that number parsed (``,`` groups thousands, ``.`` is the decimal point; an integer field
  is offered only whole numbers);
- link: each line whose element has a URL in the snapshot's ``url_map``; the value is that URL.

Every kind also offers :data:`~stagehand_py._prompts.extract.NOT_ON_PAGE`. Answers are made
safe for a grammar's enum (:func:`~stagehand_py._prompts.choice.enum_safe`: no double quotes
or backslashes) and cut at :data:`_ANSWER_MAX` characters with ``…`` (the line is still the
whole line); the lines are shown the same way, so the model copies what it sees.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Literal, TypeAlias

from .._prompts.choice import enum_safe
from .._prompts.extract import NOT_ON_PAGE
from ..snapshot import SnapshotElement, parse_outline

__all__ = ["Choice", "ChoiceKind", "PageLine", "line_choices", "numbers_in", "page_lines", "parse_number", "pieces"]

ChoiceKind: TypeAlias = Literal["text", "number", "integer", "link"]

#: Roles that only structure the page: no line of their own (their words are their children's).
_STRUCTURE = frozenset({
    "body", "generic", "none", "presentation", "navigation", "main", "banner", "contentinfo", "complementary",
    "region", "search", "form", "list", "listitem", "table", "grid", "treegrid", "row", "rowgroup", "group",
    "toolbar", "menubar", "menu", "tablist", "tabpanel", "tree", "radiogroup", "listbox", "article", "section",
    "document", "dl", "figure", "dialog", "alertdialog", "paragraph", "blockquote",
})
#: Roles whose words are plain page text: the line says no role.
_PLAIN = frozenset({"StaticText", "text", "cell", "gridcell", "definition", "caption", "label"})
_TABLES = frozenset({"table", "grid", "treegrid"})
_CELLS = frozenset({"cell", "gridcell", "rowheader", "columnheader"})
#: State a reader may need for a yes/no field (the checkbox is ticked).
_STATES = ("checked", "mixed", "selected")

#: An answer longer than this is cut (``…``): copying a whole paragraph costs a small model
#: seconds, and its first words already name the line.
_ANSWER_MAX = 60
#: Parts of a line longer than this many words are offered whole only (no runs of words).
_SHORT_PART = 8
#: Where a line's words split into parts: label colons, separators, sentence ends, brackets.
_SEPARATORS = re.compile(r":\s+|\s+[|·•—–-]\s+|;\s+|,\s+|\.\s+|[()\[\]{}]")
#: A number as a page writes it: optional sign, digits with ``,`` thousands groups, a decimal part.
_NUMBER = re.compile(r"(?<![\w.,])[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\d])")


@dataclass(frozen=True)
class PageLine:
    """One numbered line: the element it shows, what it says and, for a link, where it goes."""

    number: int
    element_id: str
    #: The column header, term or role said before the words ("" for plain text).
    label: str
    #: The words the line holds (a field's value when it has one): what values are read from.
    text: str
    url: str | None = None
    #: State flags shown after the words (``checked``...).
    states: tuple[str, ...] = ()

    @property
    def shown(self) -> str:
        """The line as the model sees it, and as a text answer may copy it: ``Pages: 412 [8]``."""
        words = enum_safe(f"{self.label}: {self.text}" if self.label else self.text)
        flags = "".join(f" ({state})" for state in self.states)
        return f"{words}{flags} [{self.number}]"


def _label(header: str, role: str) -> str:
    said = "" if role in _PLAIN else role
    if header and said:
        return f"{header} ({said})"
    return header or said


def page_lines(outline: str, url_map: Mapping[str, str]) -> list[PageLine]:
    """The text lines of ``outline`` (a page's redacted outline, or part of one), numbered from 1."""
    elements = parse_outline(outline)
    out: list[PageLine] = []
    # Open tables: (depth, column headers); the open row's depth and next column; open cells
    # and terms: (depth, label) that lines deeper than them (or, for a term, beside it) carry.
    tables: list[tuple[int, list[str]]] = []
    row: tuple[int, int] | None = None
    cell: tuple[int, str] | None = None
    term: tuple[int, str, str, bool] | None = None  # (depth, name, id, whether a line took it)
    for i, element in enumerate(elements):
        depth, role = element.depth, element.role
        while tables and depth <= tables[-1][0]:
            tables.pop()
        if row is not None and depth <= row[0]:
            row = None
        if cell is not None and depth <= cell[0]:
            cell = None
        if term is not None and (depth < term[0] or (depth == term[0] and role not in _PLAIN)):
            out.extend(_term_line(term, len(out) + 1))
            term = None
        if role in _TABLES:
            tables.append((depth, []))
            continue
        if role == "row" and tables:
            row = (depth, 0)
            continue
        if role in _CELLS and tables and row is not None:
            column = row[1]
            row = (row[0], column + 1)
            headers = tables[-1][1]
            if role == "columnheader":
                headers.extend([""] * (column + 1 - len(headers)))
                headers[column] = element.name
            else:
                cell = (depth, headers[column] if column < len(headers) else "")
            if role != "columnheader" and _has_words_below(elements, i):
                continue  # what is inside the cell carries its header
        if role == "term":
            term = (depth, element.name, element.id, False)
            continue
        line = _line(len(out) + 1, element, url_map, cell[1] if cell is not None else "")
        if line is None:
            continue
        if term is not None and depth == term[0] and role in _PLAIN:
            line = PageLine(line.number, line.element_id, term[1], line.text, line.url, line.states)
            term = (term[0], term[1], term[2], True)
        out.append(line)
    if term is not None:
        out.extend(_term_line(term, len(out) + 1))
    return out


def _term_line(term: tuple[int, str, str, bool], number: int) -> list[PageLine]:
    """A term no value took, as a line of its own (``term: Published``); none once one took it."""
    _, name, element_id, taken = term
    return [] if taken or not name.strip() else [PageLine(number, element_id, "term", name)]


def _has_words_below(elements: list[SnapshotElement], i: int) -> bool:
    depth = elements[i].depth
    for element in elements[i + 1:]:
        if element.depth <= depth:
            return False
        if element.role not in _STRUCTURE and (element.name.strip() or element.value):
            return True
    return False


def _line(number: int, element: SnapshotElement, url_map: Mapping[str, str], header: str) -> PageLine | None:
    """The line of ``element``, or None when it holds no words of its own."""
    if element.role in _STRUCTURE:
        return None
    if element.value is not None:
        if not element.value.strip():
            return None  # an empty field: its name is a label, not data
        label = _label(element.name or header, element.role)
        return PageLine(number, element.id, label, element.value, url_map.get(element.id))
    if not element.name.strip():
        return None
    states = tuple(flag for flag in element.flags if flag in _STATES)
    return PageLine(number, element.id, _label(header, element.role), element.name, url_map.get(element.id), states)


@dataclass(frozen=True)
class Choice:
    """What one answer means: the line it names and the value read from it."""

    line: PageLine
    value: str | int | float


def numbers_in(text: str) -> list[str]:
    """The numbers ``text`` holds, as written (``["1", "20", "1,291"]``), once each."""
    return list(dict.fromkeys(m.group(0) for m in _NUMBER.finditer(text)))


def parse_number(written: str) -> int | float:
    """A number as a page writes it (``"3,878,100"``, ``"−4.5"``) as a Python number."""
    plain = written.replace(",", "").replace("−", "-")
    return float(plain) if "." in plain else int(plain)


def _cut(text: str) -> str:
    text = enum_safe(text)
    if len(text) <= _ANSWER_MAX:
        return text
    return text[: _ANSWER_MAX - 1].rsplit(" ", 1)[0].rstrip(" ,.;:") + "…"


def pieces(text: str) -> list[str]:
    """The pieces of ``text`` between separators (``Basic`` and ``$5 per month`` of
    ``Basic: $5 per month``), in order."""
    return [piece for piece in (raw.strip(" .,;:") for raw in _SEPARATORS.split(text)) if piece]


def _parts(text: str, *, runs: bool) -> Iterator[str]:
    """The parts of a line's words a text value may be: each piece between separators and, with
    ``runs``, each short piece's leading and trailing runs of words."""
    for piece in pieces(text):
        yield piece
        words = piece.split()
        if runs and len(words) <= _SHORT_PART:
            for n in range(1, len(words)):
                yield " ".join(words[:n])
                yield " ".join(words[n:])


def line_choices(lines: list[PageLine], kind: ChoiceKind, *, detail: int = 2) -> dict[str, Choice | None]:
    """Every answer a field of ``kind`` may give about ``lines``, mapped to what it means (None:
    :data:`NOT_ON_PAGE`), in page order. ``detail`` 2 offers a text line's parts and runs of
    words, 1 its pieces between separators only, 0 the whole line only (to fit a small budget)."""
    out: dict[str, Choice | None] = {}

    def offer(answer: str, line: PageLine, value: str | int | float) -> None:
        out.setdefault(f"{_cut(answer)} [{line.number}]", Choice(line, value))

    for line in lines:
        if kind == "link":
            if line.url is not None:
                offer(line.shown.rsplit(" [", 1)[0], line, line.url)
                offer(line.text, line, line.url)
        elif kind == "text":
            offer(line.shown.rsplit(" [", 1)[0], line, line.text)
            offer(line.text, line, line.text)
            if detail:
                for part in _parts(line.text, runs=detail > 1):
                    offer(part, line, part)
        else:
            for written in numbers_in(line.text):
                value = parse_number(written)
                if kind == "integer":
                    if not float(value).is_integer():
                        continue
                    value = int(value)
                offer(written, line, value)
    out[NOT_ON_PAGE] = None
    return out
