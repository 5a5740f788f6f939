"""The public Snapshot value and token budgeting of outlines (pure, no I/O)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from .._errors import InvalidArgumentError
from ._records import SnapshotElement, parse_line, parse_outline

__all__ = ["OutlineChunk", "Snapshot", "estimate_tokens", "split_outline"]

_LINE_ID = re.compile(r"^\s*\[(\d+-\d+)\]")


def estimate_tokens(text: str) -> int:
    """Tokens a model will count for ``text``: characters / 4, rounded up.

    Within about 10% of o200k on outline text, and needs no tokenizer files.
    """
    return (len(text) + 3) // 4


@dataclass(frozen=True, slots=True)
class OutlineChunk:
    """One ordered piece of an outline that fits a token budget.

    ``text`` starts with the lines of the chunk's ancestors (``context_lines`` of them) so the
    model sees where the piece sits in the page; ``first_line``/``last_line`` index the
    original outline's lines covered by this chunk (0-based, inclusive).
    """

    index: int
    text: str
    tokens: int
    first_line: int
    last_line: int
    context_lines: int


def _depth(line: str) -> int:
    return (len(line) - len(line.lstrip(" "))) // 2


def split_outline(tree: str, max_tokens: int) -> list[OutlineChunk]:
    """Split an outline into ordered chunks of at most ``max_tokens`` estimated tokens each.

    Lines are never reordered; each chunk repeats its first line's ancestor lines as context
    (when they fit). A single line longer than the budget is cut into pieces.
    """
    if max_tokens < 8:
        raise InvalidArgumentError(f"max_tokens must be at least 8 to hold one outline line, got {max_tokens}.")
    lines = tree.split("\n") if tree else []
    budget_chars = max_tokens * 4 - 3  # estimate_tokens(text) <= max_tokens  <=>  len <= 4*max - 3
    chunks: list[OutlineChunk] = []
    # ancestors[d] = the latest line at depth d, to rebuild context for a chunk that starts deep.
    ancestors: list[str] = []

    current: list[str] = []
    context_count = 0
    first = 0
    size = 0

    def flush(last: int) -> None:
        nonlocal current, size
        if len(current) > context_count:
            text = "\n".join(current)
            chunks.append(OutlineChunk(len(chunks), text, estimate_tokens(text), first, last, context_count))
        current = []
        size = 0

    def start(at: int, depth: int, room_for: int) -> None:
        nonlocal current, size, context_count, first
        context = ancestors[:depth]
        context_size = sum(len(c) + 1 for c in context)
        if context_size + room_for > budget_chars:
            context = []  # the line itself matters more than its breadcrumbs
            context_size = 0
        current = list(context)
        context_count = len(context)
        size = context_size
        first = at

    for i, line in enumerate(lines):
        depth = _depth(line)
        del ancestors[depth:]
        if len(line) > budget_chars:
            flush(i - 1)
            indent = line[: len(line) - len(line.lstrip(" "))]
            piece_room = budget_chars - len(indent) - 2
            body = line.lstrip(" ")
            for n, offset in enumerate(range(0, len(body), piece_room)):
                piece = indent + ("" if n == 0 else "… ") + body[offset : offset + piece_room]
                chunks.append(OutlineChunk(len(chunks), piece, estimate_tokens(piece), i, i, 0))
            ancestors.append(line[: budget_chars // 4])
            continue
        if not current:
            start(i, depth, len(line))
        elif size + len(line) + 1 > budget_chars:
            flush(i - 1)
            start(i, depth, len(line))
        current.append(line)
        size += len(line) + 1
        ancestors.append(line)
    flush(len(lines) - 1)
    return chunks


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What the page looks like to a model: an outline plus maps back to the page.

    - ``tree``: one line per kept node, ``[<frameOrdinal>-<n>] <role>: <name>`` (``n`` numbers the node within its
      document, the same in every snapshot of that document),
      two spaces of indent per level (see :mod:`stagehand_py.snapshot` for every rule).
    - ``xpath_map``: element id -> canonical absolute XPath resolving to exactly that node,
      through iframes and open/closed shadow roots.
    - ``url_map``: element id -> absolute URL, for links.
    - ``url``: the page URL when it was taken.
    - ``dom_confidence``: how much of the page the outline can tell (0..1, see
      :mod:`stagehand_py.snapshot._confidence`); None unless the snapshot was taken with ``confidence=True``.
    """

    tree: str
    xpath_map: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    url_map: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    url: str = ""
    dom_confidence: float | None = None

    @property
    def tokens(self) -> int:
        """Estimated model tokens of ``tree`` (characters / 4)."""
        return estimate_tokens(self.tree)

    @property
    def ids(self) -> list[str]:
        """Element ids in outline order."""
        return [m.group(1) for line in self.tree.split("\n") if (m := _LINE_ID.match(line))]

    @property
    def elements(self) -> list[SnapshotElement]:
        """Every line as a :class:`SnapshotElement` (id, role, name, value, flags, depth, xpath,
        url), in outline order. Parsed from ``tree`` on each access: keep the list if you reuse it."""
        return parse_outline(self.tree, xpath_map=self.xpath_map, url_map=self.url_map)

    def element(self, element_id: str) -> SnapshotElement | None:
        """The record of ``element_id``, or None when it is not in the outline."""
        marker = f"[{element_id}]"
        for line in self.tree.split("\n"):
            if line.lstrip(" ").startswith(marker):
                return parse_line(line, xpath_map=self.xpath_map, url_map=self.url_map)
        return None

    def chunks(self, max_tokens: int) -> list[OutlineChunk]:
        """The outline split into ordered chunks of at most ``max_tokens`` each."""
        return split_outline(self.tree, max_tokens)

    def id_of(self, selector: str) -> str | None:
        """The id of the element ``selector`` (``xpath=<path>`` or the bare path) names, or None
        when it names none of this snapshot's elements: the one selector -> id lookup."""
        xpath = selector.removeprefix("xpath=")
        return next((eid for eid, path in self.xpath_map.items() if path == xpath), None)

    def line_for(self, element_id: str) -> str | None:
        """The outline line of ``element_id`` (without indent), or None when not in the tree."""
        marker = f"[{element_id}]"
        for line in self.tree.split("\n"):
            stripped = line.lstrip(" ")
            if stripped.startswith(marker):
                return stripped
        return None

    def __repr__(self) -> str:
        return f"Snapshot(url={self.url!r}, lines={self.tree.count(chr(10)) + 1 if self.tree else 0}, tokens~{self.tokens})"
