"""The outline's lines as structured records: one parser, one list of actionable roles.

Everything that needs to know what a line says (the choice picker, the vision boxes, the
agent's page signature, the identity check before an act) reads :class:`SnapshotElement`
records from :attr:`Snapshot.elements` instead of re-parsing outline text with its own regex.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

__all__ = ["ACTIONABLE_ROLES", "FLAGS", "SnapshotElement", "VOLATILE_FLAGS", "parse_line", "parse_outline", "states_apart"]

#: Roles a user can act on (click, type, select, toggle): the one list every part uses.
ACTIONABLE_ROLES = frozenset({
    "button", "link", "textbox", "searchbox", "combobox", "listbox", "option", "checkbox", "radio",
    "switch", "slider", "spinbutton", "menuitem", "menuitemcheckbox", "menuitemradio", "tab", "treeitem",
})

#: State flags the outline prints after a line, in the order it prints them.
FLAGS = ("checked", "mixed", "selected", "disabled", "expanded", "collapsed", "required", "filled", "focused", "scrollable")

_HEAD = re.compile(r"^( *)\[(\d+-\d+)\] (.*)$")
_TRAILING_FLAG = re.compile(r" \[(" + "|".join(FLAGS) + r")\]$")
_VALUE = re.compile(r' value="((?:[^"\\]|\\.)*)"$')


@dataclass(frozen=True, slots=True)
class SnapshotElement:
    """One outline line, parsed.

    ``id`` is ``<frameOrdinal>-<n>``; ``role`` the ARIA role (or the tag name of a structural
    wrapper); ``name`` the accessible name ("" when none); ``value`` the field's value (None when
    the line shows none); ``flags`` the state flags (``"checked"``, ``"disabled"``...); ``depth``
    the indent level; ``xpath`` and ``url`` from the snapshot's maps ("" / None when absent).
    """

    id: str
    role: str
    name: str
    value: str | None
    flags: tuple[str, ...]
    depth: int
    xpath: str = ""
    url: str | None = None

    @property
    def actionable(self) -> bool:
        """Whether a user could act on it (its role is in :data:`ACTIONABLE_ROLES`)."""
        return self.role in ACTIONABLE_ROLES

    @property
    def line(self) -> str:
        """The line as the outline shows it, without indent."""
        text = f"[{self.id}] {self.role}: {self.name}" if self.name else f"[{self.id}] {self.role}"
        if self.value is not None:
            text += ' value="' + self.value.replace('"', '\\"') + '"'
        return text + "".join(f" [{flag}]" for flag in self.flags)


def parse_line(line: str, *, xpath_map: Mapping[str, str] | None = None, url_map: Mapping[str, str] | None = None) -> SnapshotElement | None:
    """The record of one outline line, or None when ``line`` is not an element line.

    Read from the right: trailing flags, then a trailing ``value="..."``, then ``role: name``
    (a name may itself contain ``: ``; a role never does).
    """
    head = _HEAD.match(line)
    if head is None:
        return None
    indent, element_id, rest = head.groups()
    flags: list[str] = []
    while (flag := _TRAILING_FLAG.search(rest)) is not None:
        flags.append(flag.group(1))
        rest = rest[: flag.start()]
    value = None
    if (quoted := _VALUE.search(rest)) is not None:
        value = quoted.group(1).replace('\\"', '"')
        rest = rest[: quoted.start()]
    role, _, name = rest.partition(": ")
    return SnapshotElement(
        id=element_id,
        role=role.strip(),
        name=name,
        value=value,
        flags=tuple(reversed(flags)),
        depth=len(indent) // 2,
        xpath=(xpath_map or {}).get(element_id, ""),
        url=(url_map or {}).get(element_id),
    )


def parse_outline(tree: str, *, xpath_map: Mapping[str, str] | None = None, url_map: Mapping[str, str] | None = None) -> list[SnapshotElement]:
    """Every element line of ``tree`` as a record, in outline order."""
    out = []
    for line in tree.split("\n"):
        record = parse_line(line, xpath_map=xpath_map, url_map=url_map)
        if record is not None:
            out.append(record)
    return out


#: Line states that change while the page's structure stays (a box ticked, the focus moved, a
#: password typed), shown apart with named fields' values (:func:`states_apart`). ``[expanded]``
#: and ``[disabled]`` stay in the outline: what a group shows and what can be acted on are read
#: from it (the choices, a heal's candidates), and they change with the page's structure anyway.
VOLATILE_FLAGS = frozenset({"checked", "mixed", "selected", "filled", "focused"})


def states_apart(text: str) -> tuple[str, list[str]]:
    """``text`` (an outline or a part of one) without its actionable elements' volatile states, and
    a line per element that had any: ``[0-15] textbox: Username value="%username%"``. A field with
    no name keeps its value in the outline (it is all that tells that field apart); every other
    line is kept byte for byte."""
    stable: list[str] = []
    states: list[str] = []
    for line in text.split("\n"):
        element = parse_line(line)
        if element is None or not element.actionable:  # text: a page can write "[checked]" in it
            stable.append(line)
            continue
        moved_value = element.value is not None and bool(element.name)
        if not (moved_value or VOLATILE_FLAGS.intersection(element.flags)):
            stable.append(line)
            continue
        value = None if moved_value else element.value
        stable.append(line[: len(line) - len(line.lstrip(" "))] + replace(
            element, value=value, flags=tuple(f for f in element.flags if f not in VOLATILE_FLAGS)).line)
        states.append(replace(element, value=element.value if moved_value else None,
                              flags=tuple(f for f in element.flags if f in VOLATILE_FLAGS)).line)
    return "\n".join(stable), states
