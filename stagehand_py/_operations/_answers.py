"""The model's element answers checked against the page and turned into Actions.

Problems are worded for the model: they are sent back to it as a re-ask. What a good model
reasonably answers is taken rather than re-asked:

- an ``<option>`` line of a native ``<select>`` picked for ``select_option`` or ``click``
  becomes ``select_option`` of that option's label on its ``<select>`` (what a user means);
- a radio, checkbox or switch picked for ``select_option`` with its own name (or no argument)
  becomes ``check`` of it ("choose the Pro plan" read as selecting the Pro option); with another
  option's name it is re-asked, never moved to a sibling the model did not pick;
- an element given by the text of its outline line instead of its id ('textbox: Password',
  'Inner button', '43' for '0-43') is that element when the text names exactly one
  (:func:`elements_meant`); text that names several is re-asked with their ids listed;
- with ``missing_values=True`` (observe, act's planner), ``fill``/``type``/``select_option``/
  ``press`` without the value the instruction did not give are kept: the value becomes a
  ``%placeholder%`` named after the element, listed in ``Action.missing_arguments``, for the
  caller to fill with ``variables=`` (act refuses to run it before);
- text the instruction gives is typed as it gives it: a ``fill``/``type`` value that is the
  instruction's text with other case or punctuation around it (``type dumps`` answered
  ``'.dumps'``: the page's ``json.dumps`` leaked in) becomes the instruction's text
  (:func:`as_instruction_gives`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence

from .._actions import placeholders_in
from .._actions._methods import check_arity
from .._errors import InvalidArgumentError
from .._prompts.observe import ObservedElement
from .._types import Action
from ..snapshot import Snapshot

logger = logging.getLogger("stagehand_py._operations")

__all__ = ["VALUE_ARGUMENTS", "as_instruction_gives", "check_elements", "element_id", "elements_meant", "example_id",
           "lines_named", "to_action"]

_ID = re.compile(r"^\[?\s*(\d+-\d+)\s*\]?$")
# A native <select>'s option (maybe inside an <optgroup>): the path of the select, then the option.
_OPTION_PATH = re.compile(r"^(?P<select>.*/select\[\d+\])(?:/optgroup\[\d+\])?/option\[\d+\]$")
#: Methods whose one argument is a value only the caller can know, and what it is called.
VALUE_ARGUMENTS = {"fill": "text", "type": "text", "select_option": "option", "press": "key"}


def element_id(raw: str, snapshot: Snapshot) -> str | None:
    """The snapshot id the model meant by ``raw`` ('0-42', '[0-42]'), or None if it has none."""
    m = _ID.match(raw.strip()) if isinstance(raw, str) else None
    if m and m.group(1) in snapshot.xpath_map:
        return m.group(1)
    return None


def elements_meant(raw: str, snapshot: Snapshot) -> list[str]:
    """The ids an observe/act answer's ``raw`` element may mean: its id; else, for '42', the ids
    numbered 42 in any frame (the frame ordinal dropped); else the lines whose text it is
    (:func:`lines_named`). One id is the element picked. Only for an element the model acts on: a
    URL field's answer must be an id or a link's URL, never a name."""
    if not isinstance(raw, str) or _ID.match(raw.strip()):
        eid = element_id(raw, snapshot)
        return [] if eid is None else [eid]
    if (number := raw.strip(" []")).isdigit():
        return [eid for eid in snapshot.xpath_map if eid.partition("-")[2] == number]
    return lines_named(raw, snapshot)


def lines_named(raw: str, snapshot: Snapshot) -> list[str]:
    """The ids of the outline lines whose text is ``raw`` (case and spacing aside): its
    'role: name', else its name, else its role; among several, the ones a user can act on.

    A small model asked for an id often copies the text after it instead ('textbox: Password',
    'Inner button'); when that text names one line, that line is what it picked. Several lines
    are listed back to it in the re-ask."""
    def norm(text: str) -> str:
        return " ".join(text.split()).casefold()

    wanted = norm(raw.strip(" \t'\"`[]"))
    if not wanted:
        return []
    elements = [e for e in snapshot.elements if e.id in snapshot.xpath_map]
    for text_of in (lambda e: f"{e.role}: {e.name}", lambda e: e.name, lambda e: e.role):
        found = [e for e in elements if norm(text_of(e)) == wanted]
        if len(found) > 1:
            found = [e for e in found if e.actionable] or found
        if found:
            return [e.id for e in found]
    return []


def example_id(snapshot: Snapshot) -> str:
    """``", e.g. '<id>'"`` with an id this page really has, or "" for an empty page.

    An example id in a prompt must come from the page itself: a small model copies a made-up
    example ('0-42') instead of reading the outline.
    """
    first = next(iter(snapshot.xpath_map), None)
    return f", e.g. '{first}'" if first is not None else ""


def to_action(snapshot: Snapshot, eid: str, *, description: str, method: str, arguments: Sequence[str],
              missing: Sequence[str] = ()) -> Action:
    """An Action on element ``eid`` of ``snapshot``; a drag target given as an id becomes its selector."""
    args = [str(a) for a in arguments]
    if method == "drag_and_drop" and args:
        target = element_id(args[0], snapshot)
        if target is not None:
            args[0] = f"xpath={snapshot.xpath_map[target]}"
    return Action(selector=f"xpath={snapshot.xpath_map[eid]}", description=description, method=method, arguments=args,
                  missing_arguments=list(missing))


def _as_select(snapshot: Snapshot, eid: str, method: str, arguments: Sequence[str],
               ids_by_path: Mapping[str, str]) -> tuple[str, str, list[str]]:
    """(id, method, arguments), with an option of a native select picked for ``select_option``
    or ``click`` turned into ``select_option`` of its label on the select itself."""
    m = _OPTION_PATH.match(snapshot.xpath_map[eid])
    select = ids_by_path.get(m.group("select")) if m else None
    option = snapshot.element(eid)
    if select is None or option is None or method not in ("select_option", "click") or not option.name:
        return eid, method, list(arguments)
    given = [a for a in arguments if a]
    return select, "select_option", given if method == "select_option" and given else [option.name]


#: Roles a person "selects" by checking the element itself.
_CHECKABLE_ROLES = frozenset({"radio", "checkbox", "switch", "menuitemradio", "menuitemcheckbox"})


def _as_check(snapshot: Snapshot, eid: str, method: str, arguments: list[str]) -> tuple[str, list[str]] | str:
    """(method, arguments), with ``select_option`` of a checkable element's own name turned into
    ``check``; or a problem for the model when it names another option."""
    element = snapshot.element(eid)
    if method != "select_option" or element is None or element.role not in _CHECKABLE_ROLES:
        return method, arguments
    name = " ".join(element.name.split()).casefold()
    given = [" ".join(a.split()).casefold() for a in arguments if a.strip()]
    if not given or (name and all(g in name or name in g for g in given)):
        return "check", []
    return (f"select_option is only for a native select, and [{eid}] is the {element.role} {element.name!r}, "
            f"not {arguments[0]!r}: pick the line of the {element.role} you mean, with method check")


def _placeholder(snapshot: Snapshot, eid: str, method: str, taken: set[str]) -> str:
    """A placeholder name for the value of ``method`` on ``eid``: the element's name as a word
    (``search_products``), else the argument's kind (``text``); never one already ``taken``."""
    element = snapshot.element(eid)
    word = re.sub(r"[^a-z0-9]+", "_", (element.name if element else "").lower()).strip("_")[:32].strip("_")
    base = word if word and not word[0].isdigit() else VALUE_ARGUMENTS[method]
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def check_elements(elements: Sequence[ObservedElement], snapshot: Snapshot, variables: Mapping[str, str], *,
                   missing_values: bool = False) -> tuple[list[str], list[Action]]:
    """Map the model's elements to Actions; list what is wrong (unknown id, placeholder, arguments).

    ``missing_values``: a value method without its value is kept (see the module docstring).
    """
    problems: list[str] = []
    actions: list[Action] = []
    ids_by_path = {path: eid for eid, path in snapshot.xpath_map.items()}
    # Placeholder names are unique within the answer; one that equals a given variable's name
    # (the field's own name) is filled by that variable.
    taken: set[str] = set()
    for n, element in enumerate(elements):
        several = elements_meant(element.element_id, snapshot)
        eid = several[0] if len(several) == 1 else None
        if eid is None:
            hint = (f"; it reads like the lines {', '.join(f'[{i}]' for i in several[:6])}: answer with the id of the "
                    "one you mean" if 1 < len(several) <= 6 else "")
            problems.append(
                f"elements[{n}].element_id {element.element_id!r} is not an id of the outline; use an id shown "
                f"in brackets at the start of an outline line{example_id(snapshot)}{hint}"
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
        eid, method, arguments = _as_select(snapshot, eid, element.method, element.arguments, ids_by_path)
        checked = _as_check(snapshot, eid, method, arguments)
        if isinstance(checked, str):
            problems.append(f"elements[{n}]: {checked}")
            continue
        method, arguments = checked
        missing: list[str] = []
        if missing_values and method in VALUE_ARGUMENTS and not [a for a in arguments if a.strip()]:
            missing = [_placeholder(snapshot, eid, method, taken)]
            arguments = [f"%{missing[0]}%"]
        try:
            check_arity(method, arguments)
        except InvalidArgumentError as exc:
            problems.append(f"elements[{n}]: {exc}")
            continue
        actions.append(to_action(snapshot, eid, description=element.description, method=method, arguments=arguments,
                                 missing=missing))
    return problems, actions


#: What a small model puts around a value it copies: quotes, dots, brackets, spaces.
_AROUND = " \t.,;:!?'\"`()[]{}<>"


def as_instruction_gives(actions: Sequence[Action], instruction: str) -> list[Action]:
    """``actions`` with each text value (``fill``, ``type``) that alters what the instruction
    gives written as the instruction gives it: the value is not in the instruction as written,
    but without the punctuation around it and read case-blind it is (``type dumps`` answered
    ``'.dumps'``). A value the instruction does not hold (from the page, a placeholder) is kept."""
    out = []
    for action in actions:
        value = action.arguments[0] if action.method in ("fill", "type") and action.arguments else ""
        core = value.strip(_AROUND)
        found = None
        if core and value not in instruction and not placeholders_in([value]):
            found = re.search(rf"(?<!\w){re.escape(core)}(?!\w)", instruction, re.IGNORECASE)
        if found is None:
            out.append(action)
            continue
        # The model's value is not logged: it may be copied from the page (where typed values show).
        logger.info("%s value altered from the instruction's %r: typing it as written", action.method, found.group(0))
        out.append(action.model_copy(update={"arguments": [found.group(0), *action.arguments[1:]]}))
    return out
