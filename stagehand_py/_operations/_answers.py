"""The model's element answers checked against the page and turned into Actions.

Problems are worded for the model: they are sent back to it as a re-ask.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from .._actions import placeholders_in
from .._actions._methods import check_arity
from .._errors import InvalidArgumentError
from .._prompts.observe import ObservedElement
from .._types import Action
from ..snapshot import Snapshot

__all__ = ["check_elements", "element_id", "example_id", "to_action"]

_ID = re.compile(r"^\[?\s*(\d+-\d+)\s*\]?$")


def element_id(raw: str, snapshot: Snapshot) -> str | None:
    """The snapshot id the model meant by ``raw`` ('0-42', '[0-42]'), or None if it has none."""
    m = _ID.match(raw.strip()) if isinstance(raw, str) else None
    if m and m.group(1) in snapshot.xpath_map:
        return m.group(1)
    return None


def example_id(snapshot: Snapshot) -> str:
    """``", e.g. '<id>'"`` with an id this page really has, or "" for an empty page.

    An example id in a prompt must come from the page itself: a small model copies a made-up
    example ('0-42') instead of reading the outline.
    """
    first = next(iter(snapshot.xpath_map), None)
    return f", e.g. '{first}'" if first is not None else ""


def to_action(snapshot: Snapshot, eid: str, *, description: str, method: str, arguments: Sequence[str]) -> Action:
    """An Action on element ``eid`` of ``snapshot``; a drag target given as an id becomes its selector."""
    args = [str(a) for a in arguments]
    if method == "drag_and_drop" and args:
        target = element_id(args[0], snapshot)
        if target is not None:
            args[0] = f"xpath={snapshot.xpath_map[target]}"
    return Action(selector=f"xpath={snapshot.xpath_map[eid]}", description=description, method=method, arguments=args)


def check_elements(elements: Sequence[ObservedElement], snapshot: Snapshot,
                   variables: Mapping[str, str]) -> tuple[list[str], list[Action]]:
    """Map the model's elements to Actions; list what is wrong (unknown id, placeholder, arguments)."""
    problems: list[str] = []
    actions: list[Action] = []
    for n, element in enumerate(elements):
        eid = element_id(element.element_id, snapshot)
        if eid is None:
            problems.append(
                f"elements[{n}].element_id {element.element_id!r} is not an id of the outline; use an id shown "
                f"in brackets at the start of an outline line{example_id(snapshot)}"
            )
            continue
        unknown = [p for p in placeholders_in(element.arguments) if p not in variables]
        if unknown:
            available = ", ".join(f"%{v}%" for v in variables) or "none"
            problems.append(
                f"elements[{n}].arguments use {', '.join(f'%{u}%' for u in unknown)}, which is not a given "
                f"variable (available: {available})"
            )
            continue
        try:
            check_arity(element.method, element.arguments)
        except InvalidArgumentError as exc:
            problems.append(f"elements[{n}]: {exc}")
            continue
        actions.append(to_action(snapshot, eid, description=element.description, method=element.method,
                                 arguments=element.arguments))
    return problems, actions
