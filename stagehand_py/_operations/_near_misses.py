"""Near misses: element answers the page shows to be almost right, and what each one becomes.

Every rule here reads our own records of the page (the snapshot's lines: roles, names, nesting and
xpaths, parsed once per read by the caller and handed over as :class:`SnapshotElement` records),
never the page itself. A rule either corrects the answer, where the page leaves one
reading, or says which valid choices to re-ask with (:class:`~._answers.AnswerCheck` re-asks once
and records both as :class:`~stagehand_py.Repair`):

- ``option_to_select`` (corrected): an ``<option>`` of a native ``<select>`` picked for
  ``select_option`` or ``click`` is ``select_option`` of that option's label on its select: the
  control the option belongs to, the one case where the act is on another element than the one
  the model picked;
- ``select_to_check`` (corrected): a radio, checkbox or switch picked for ``select_option`` with
  its own name (or none) is ``check`` of it; with another option's name it is re-asked, never
  moved to a sibling the model did not pick;
- ``not_editable`` (re-asked): ``fill``/``type``, or ``press`` of a key that types a character,
  on a control that takes no text (a link, a button, a native select...: :func:`takes_no_text`)
  is re-asked with the elements that take text (:func:`text_fields`);
- ``unknown_option`` (re-asked): ``select_option`` of a label that is none of the select's
  options is re-asked with the select's option labels;
- ``no_value_asked`` (corrected): an instruction that only asks to find an element ("Find the
  Company Email input", :func:`only_finds`) answered with a value method and no value of the
  caller's is ``click`` on that element: nothing was asked to be typed, and no placeholder is
  left that the caller never meant to fill (an option picked keeps its selection: the page gave
  that value);
- ``invented_placeholder`` (corrected): with no variables given, a ``%name%`` the model made up
  is a value the instruction did not give: the placeholder becomes one named after the element
  and listed in ``Action.missing_arguments``, as when the model leaves the value out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from .._prompts.choice import TEXT_METHODS
from ..snapshot import SnapshotElement

__all__ = ["CHECKABLE_ROLES", "as_check", "as_select", "native_select", "on_element", "only_finds",
           "option_labels", "option_named", "outline_line", "takes_no_text", "text_fields", "types_text"]

#: Roles that take typed text; a combobox only when it is not a native select.
_TEXT_ROLES = frozenset({"textbox", "searchbox", "spinbutton", "combobox"})
#: Roles a person "selects" by checking the element itself.
CHECKABLE_ROLES = frozenset({"radio", "checkbox", "switch", "menuitemradio", "menuitemcheckbox"})
# A native <select>'s option (maybe inside an <optgroup>): the path of the select, then the option.
_OPTION_PATH = re.compile(r"^(?P<select>.*/select\[\d+\])(?:/optgroup\[\d+\])?/option\[\d+\]$")
_SELECT_PATH = re.compile(r"/select\[\d+\]$")
# A key that types a character where it lands: one visible character, maybe with Shift.
_CHARACTER_KEY = re.compile(r"^(?:Shift\+)?\S$")
# An instruction that only asks to find something; one that asks for more goes on after a
# conjunction or a comma ("find the search box and type shoes").
_FINDS = re.compile(r"^\s*(?:please\s+)?(?:find|locate|identify|spot|show(?:\s+me)?|look\s+for|point\s+(?:to|out)|"
                    r"where\s+(?:is|are))\b", re.IGNORECASE)
_MORE = re.compile(r"\b(?:and|then)\b|[,;]", re.IGNORECASE)


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def text_fields(elements: Sequence[SnapshotElement]) -> set[str]:
    """The ids of ``elements`` (outline records in page order) that take typed text: textboxes,
    searchboxes, spinbuttons, and comboboxes other than a native select (a combobox with option
    lines under it, as the prompts describe one)."""
    found = set()
    for n, element in enumerate(elements):
        if element.role not in _TEXT_ROLES:
            continue
        if element.role == "combobox" and _has_options(elements, n):
            continue
        found.add(element.id)
    return found


def takes_no_text(element: SnapshotElement | None, fields: set[str]) -> bool:
    """Whether the page shows that ``element`` takes no text: a control (a link, a button, a
    checkbox, a native select...) that is none of the ``fields`` (:func:`text_fields`). Another
    line (text, a cell, a generic box) may be editable content the outline does not mark, so the
    browser decides for it."""
    return element is not None and element.actionable and element.id not in fields


def _has_options(elements: Sequence[SnapshotElement], n: int) -> bool:
    depth = elements[n].depth
    for element in elements[n + 1:]:
        if element.depth <= depth:
            return False
        if element.role == "option":
            return True
    return False


def types_text(method: str, arguments: Sequence[str]) -> bool:
    """Whether ``method`` with ``arguments`` puts text where it lands: ``fill``, ``type``, or
    ``press`` of a character key (``press Enter`` on a link or a button is a fine action)."""
    if method in TEXT_METHODS:
        return True
    return method == "press" and bool(arguments) and bool(_CHARACTER_KEY.match(arguments[0].strip()))


def only_finds(instruction: str | None) -> bool:
    """Whether ``instruction`` only asks to find an element: it starts with find, locate,
    identify, spot, show, look for, point to/out or where is, and asks nothing more (no 'and',
    'then', comma or semicolon). observe() without an instruction asks for each element's most
    useful action, so it is not one."""
    return bool(instruction) and bool(_FINDS.match(instruction or "")) and not _MORE.search(instruction or "")


def native_select(element: SnapshotElement | None) -> bool:
    """Whether ``element`` is a native ``<select>`` (by its xpath)."""
    return element is not None and bool(_SELECT_PATH.search(element.xpath))


def option_labels(elements: Sequence[SnapshotElement], select_path: str) -> list[str]:
    """The labels of the options of the native select at ``select_path`` as the outline shows them
    (its optgroups' options included), in page order; ``elements``: the snapshot's records."""
    labels = []
    for element in elements:
        m = _OPTION_PATH.match(element.xpath)
        if element.role == "option" and m and m.group("select") == select_path:
            labels.append(element.name)
    return labels


def option_named(labels: Sequence[str], wanted: str) -> bool:
    """Whether ``wanted`` is one of ``labels``, case and spacing aside (as the executor matches)."""
    return _norm(wanted) in {_norm(label) for label in labels}


def as_select(eid: str, option: SnapshotElement | None, method: str, arguments: Sequence[str],
              ids_by_path: Mapping[str, str]) -> tuple[str, str, list[str]]:
    """(id, method, arguments), with an option of a native select (element ``eid``, its record
    ``option``) picked for ``select_option`` or ``click`` turned into ``select_option`` of its label
    on the select itself; the answer's own label stands when it gives one."""
    m = _OPTION_PATH.match(option.xpath) if option is not None else None
    select = ids_by_path.get(m.group("select")) if m else None
    if select is None or option is None or method not in ("select_option", "click") or not option.name:
        return eid, method, list(arguments)
    given = [a for a in arguments if a]
    return select, "select_option", given if method == "select_option" and given else [option.name]


def as_check(eid: str, element: SnapshotElement | None, method: str, arguments: list[str],
             redact: Callable[[str], str]) -> tuple[str, list[str]] | str:
    """(method, arguments), with ``select_option`` of a checkable element (``eid``, its record
    ``element``) with its own name turned into ``check``; or a problem for the model when it names
    another option."""
    if method != "select_option" or element is None or element.role not in CHECKABLE_ROLES:
        return method, arguments
    name = _norm(element.name)
    given = [_norm(a) for a in arguments if a.strip()]
    if not given or (name and all(g in name or name in g for g in given)):
        return "check", []
    return (f"select_option is only for a native select, and [{eid}] is the {element.role} "
            f"{redact(element.name)!r}, not {redact(arguments[0])!r}: pick the line of the {element.role} you mean, "
            "with method check")


def outline_line(eid: str, element: SnapshotElement | None) -> str:
    """``"[0-39] link: 1"``: element ``eid``'s id, role and name as its outline line (its record
    ``element``) shows them (never its value, which may be one the user typed)."""
    if element is None:
        return f"[{eid}]"
    return f"[{eid}] {element.role}: {element.name}" if element.name else f"[{eid}] {element.role}"


def on_element(method: str, arguments: Sequence[str], eid: str, element: SnapshotElement | None,
               redact: Callable[[str], str]) -> str:
    """``method`` with ``arguments`` on element ``eid`` (its record ``element``) in words, for a
    :class:`~stagehand_py.Repair`: ``"type ['json'] on [0-39] link: 1"``."""
    return redact(f"{method} {list(arguments)!r} on {outline_line(eid, element)}")
