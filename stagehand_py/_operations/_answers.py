"""The model's element answers checked against the page and turned into Actions.

Problems are worded for the model: they are sent back to it as a re-ask. What a good model
reasonably answers is taken rather than re-asked:

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
  (:func:`as_instruction_gives`);
- near misses (an ``<option>`` picked for its select, text typed into a link, a label that is no
  option, a value method for an instruction that only finds): corrected where the page leaves
  one reading, else re-asked once with the valid choices (:mod:`._near_misses`,
  :class:`AnswerCheck`). Each is a :class:`~stagehand_py.Repair` on the Action it made.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from .._actions import placeholders_in
from .._actions._methods import check_arity
from .._errors import InvalidArgumentError
from .._prompts.choice import NO_CHOICE
from .._prompts.common import Fence
from .._prompts.observe import ObservedElement
from .._types import Action, Repair
from ..llm import LLMClient
from ..snapshot import Snapshot, SnapshotElement
from ._near_misses import (
    as_check,
    as_select,
    native_select,
    on_element,
    only_finds,
    option_labels,
    option_named,
    outline_line,
    takes_no_text,
    text_fields,
    types_text,
)

logger = logging.getLogger("stagehand_py._operations")

__all__ = ["VALUE_ARGUMENTS", "AnswerCheck", "as_instruction_gives", "check_elements", "element_id", "elements_meant",
           "example_id", "lines_named", "note_repairs", "to_action", "without_repairs"]

_ID = re.compile(r"^\[?\s*(\d+-\d+)\s*\]?$")
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
              missing: Sequence[str] = (), repairs: Sequence[Repair] = ()) -> Action:
    """An Action on element ``eid`` of ``snapshot``; a drag target given as an id becomes its selector."""
    args = [str(a) for a in arguments]
    if method == "drag_and_drop" and args:
        target = element_id(args[0], snapshot)
        if target is not None:
            args[0] = f"xpath={snapshot.xpath_map[target]}"
    return Action(selector=f"xpath={snapshot.xpath_map[eid]}", description=description, method=method, arguments=args,
                  missing_arguments=list(missing), repairs=list(repairs))


def _placeholder(element: SnapshotElement | None, method: str, taken: set[str]) -> str:
    """A placeholder name for the value of ``method`` on ``element``: its name as a word
    (``search_products``), else the argument's kind (``text``); never one already ``taken``."""
    word = re.sub(r"[^a-z0-9]+", "_", (element.name if element else "").lower()).strip("_")[:32].strip("_")
    base = word if word and not word[0].isdigit() else VALUE_ARGUMENTS[method]
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def _same(text: str) -> str:
    return text


#: At most this many valid choices are listed in a re-ask (a long form's fields, a country list).
_LISTED = 12


@dataclass
class AnswerCheck:
    """The model's element answers checked against one read of the page.

    Called with one answer's elements (and, in choice mode, the choices they were picked from:
    id -> line), it returns the problems to re-ask with, or the Actions (see the module
    docstring). ``missing_values``: a value method without its value is kept. ``instruction``:
    what the call asked (None: observe's default), for the ``no_value_asked`` rule. ``reask``:
    near misses that need the model are re-asked; off, only the corrections apply (heal, which
    keeps the method it repairs). ``fence`` wraps the page text a re-ask lists; ``redact`` hides
    variable values in it and in every :class:`~stagehand_py.Repair`.

    Each near miss that needs the model is re-asked once per kind for this read of the page. The
    re-ask is recorded on the Action the next accepted answer makes at the same place, else in
    :attr:`left_out`; a second miss of a kind asked already is left out (``not_editable``, a
    checkable picked for another option) or, for a label that is no option (perhaps a value the
    outline does not show), handed to the executor, which matches values too.
    """

    snapshot: Snapshot
    variables: Mapping[str, str]
    instruction: str | None = None
    missing_values: bool = False
    reask: bool = True
    fence: Fence | None = None
    redact: Callable[[str], str] = _same
    #: Re-asks and answers whose element made no Action (left out, or nothing at that place).
    left_out: list[Repair] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._elements = self.snapshot.elements  # parsed once for this read: every rule reads these records
        self._by_id = {element.id: element for element in self._elements}
        self._ids_by_path = {path: eid for eid, path in self.snapshot.xpath_map.items()}
        self._text = text_fields(self._elements)
        self._asked: set[str] = set()  # the kinds re-asked already (each once)
        self._pending: dict[int, list[Repair]] = {}  # re-asks made, by the answer's position
        self._dropped: list[Repair] = []  # second misses left out by the current call

    def record_of(self, action: Action) -> SnapshotElement | None:
        """The record of the element ``action`` (one this check made) runs on, in this read."""
        eid = self._ids_by_path.get(action.selector.removeprefix("xpath="))
        return self._by_id.get(eid) if eid is not None else None

    def __call__(self, elements: Sequence[ObservedElement],
                 offered: Mapping[str, str] | None = None) -> tuple[list[str], list[Action]]:
        problems: list[str] = []
        made: list[tuple[int, Action]] = []
        asked: dict[int, Repair] = {}
        self._dropped = []
        # Placeholder names are unique within the answer; one that equals a given variable's name
        # (the field's own name) is filled by that variable.
        taken: set[str] = set()
        for n, element in enumerate(elements):
            action = self._one(n, element, offered, taken, problems, asked)
            if action is not None:
                made.append((n, action))
        if problems:
            for n, repair in asked.items():
                self._pending.setdefault(n, []).append(repair)
                self._asked.add(repair.kind)
            return problems, [action for _, action in made]
        actions = []
        for n, action in made:
            before = self._pending.pop(n, [])
            if before:
                action = action.model_copy(update={"repairs": [*before, *action.repairs]})
            actions.append(action)
        self.left_out.extend([*(repair for repairs in self._pending.values() for repair in repairs), *self._dropped])
        self._pending.clear()
        for repair in [r for a in actions for r in a.repairs]:
            logger.info("near miss (%s, %s): answered %s; %s", repair.kind, repair.outcome, repair.answered, repair.done)
        return [], actions

    def _one(self, n: int, element: ObservedElement, offered: Mapping[str, str] | None, taken: set[str],
             problems: list[str], asked: dict[int, Repair]) -> Action | None:
        """The Action ``element`` (the answer's ``n``-th) makes, or None with a problem or a record of why."""
        snapshot = self.snapshot
        several = elements_meant(element.element_id, snapshot)
        eid = several[0] if len(several) == 1 else None
        if eid is None:
            hint = (f"; it reads like the lines {', '.join(f'[{i}]' for i in several[:6])}: answer with the id of the "
                    "one you mean" if 1 < len(several) <= 6 else "")
            problems.append(
                f"elements[{n}].element_id {element.element_id!r} is not an id of the outline; use an id shown "
                f"in brackets at the start of an outline line{example_id(snapshot)}{hint}"
            )
            return None
        record = self._by_id.get(eid)
        answered = on_element(element.method, element.arguments, eid, record, self.redact)
        repairs: list[Repair] = []
        picked, method, arguments = eid, str(element.method), list(element.arguments)
        eid, method, arguments = as_select(eid, record, method, arguments, self._ids_by_path)
        if eid != picked:
            record = self._by_id.get(eid)
            repairs.append(Repair(kind="option_to_select", answered=answered,
                                  done=on_element(method, arguments, eid, record, self.redact)))
        checked = as_check(eid, record, method, arguments, self.redact)
        if isinstance(checked, str):
            self._near_miss("select_to_check", n, answered, f"elements[{n}]: {checked}", "re-asked for the element "
                            "meant, with check", problems, asked)
            return None
        if checked[0] != method:
            repairs.append(Repair(kind="select_to_check", answered=answered,
                                  done=on_element(checked[0], checked[1], eid, record, self.redact)))
        method, arguments = checked
        if method in VALUE_ARGUMENTS and only_finds(self.instruction) and eid == picked and not any(
                p in self.variables for p in placeholders_in(arguments)):
            # The instruction only finds: nothing was asked to be typed, chosen or pressed.
            method, arguments = "click", []
            repairs.append(Repair(kind="no_value_asked", answered=answered,
                                  done=on_element(method, arguments, eid, record, self.redact)))
        invented = [p for p in placeholders_in(arguments) if p not in self.variables]
        if invented and (self.variables or not self.missing_values or method not in VALUE_ARGUMENTS):
            available = ", ".join(f"%{v}%" for v in self.variables) or "none"
            problems.append(
                f"elements[{n}].arguments use {', '.join(f'%{u}%' for u in invented)}, which is not a given "
                f"variable (available: {available})"
            )
            return None
        if self.reask and types_text(method, arguments) and takes_no_text(record, self._text):
            self._not_editable(n, eid, method, answered, offered, problems, asked)
            return None
        if self.reask and method == "select_option" and arguments and not placeholders_in(arguments) \
                and record is not None and native_select(record) and "unknown_option" not in self._asked:
            labels = option_labels(self._elements, record.xpath)
            if labels and not option_named(labels, arguments[0]):
                self._unknown_option(n, eid, arguments[0], labels, answered, problems, asked)
                return None
        missing: list[str] = []
        if self.missing_values and method in VALUE_ARGUMENTS and (invented or not [a for a in arguments if a.strip()]):
            missing = [_placeholder(record, method, taken)]
            arguments = [f"%{missing[0]}%"]
            if invented:  # no variables were given: the model's placeholder names nothing
                repairs.append(Repair(kind="invented_placeholder", answered=answered, done=on_element(
                    method, arguments, eid, record, self.redact) + f", with {missing[0]!r} in missing_arguments"))
        try:
            check_arity(method, arguments)
        except InvalidArgumentError as exc:
            problems.append(f"elements[{n}]: {exc}")
            return None
        return to_action(snapshot, eid, description=element.description, method=method, arguments=arguments,
                         missing=missing, repairs=repairs)

    def _near_miss(self, kind: str, n: int, answered: str, problem: str, done: str, problems: list[str],
                   asked: dict[int, Repair]) -> None:
        """Re-ask a near miss of ``kind`` the first time (``problem``); after that, leave it out."""
        if kind in self._asked:
            self._dropped.append(Repair(kind=kind, answered=answered, outcome="dropped",
                                        done=f"left out: {kind.replace('_', ' ')} again after one re-ask"))
            logger.info("near miss (%s) again after one re-ask: %s left out", kind, answered)
            return
        problems.append(problem)
        asked[n] = Repair(kind=kind, answered=answered, done=done, outcome="re-asked")

    def _listed(self, lines: Sequence[str], label: str) -> str:
        shown = [self.redact(line) for line in lines[:_LISTED]]
        if len(lines) > _LISTED:
            shown.append(f"... and {len(lines) - _LISTED} more in the outline")
        text = "\n".join(shown)
        return self.fence.wrap(text, label) if self.fence is not None else text

    def _not_editable(self, n: int, eid: str, method: str, answered: str, offered: Mapping[str, str] | None,
                      problems: list[str], asked: dict[int, Repair]) -> None:
        if offered is not None:
            fields = [line for i, line in offered.items() if i in self._text]
        else:
            fields = [outline_line(e.id, e) for e in self._elements if e.id in self._text]
        element = self._by_id.get(eid)
        role = element.role if element is not None else "element"
        line = self.redact(outline_line(eid, element))
        what = f"elements[{n}]: {method} puts text into a field, but {line} is a {role}, which takes no text"
        none = f"'{NO_CHOICE}'" if offered is not None else "no element for it"
        if fields:
            problem = (f"{what}. The elements that take text are listed below: answer with the one the instruction "
                       f"means (same method and arguments), or {none} when none of them fits.\n"
                       f"{self._listed(fields, 'page elements that take text')}")
        else:
            problem = f"{what}, and no element here takes text: answer {none}."
        self._near_miss("not_editable", n, answered, problem,
                        f"re-asked with the {len(fields)} element(s) that take text", problems, asked)

    def _unknown_option(self, n: int, eid: str, wanted: str, labels: Sequence[str], answered: str,
                        problems: list[str], asked: dict[int, Repair]) -> None:
        line = self.redact(outline_line(eid, self._by_id.get(eid)))
        problem = (f"elements[{n}]: the select {line} has no option {self.redact(wanted)!r}. Its option labels are "
                   "listed below. If the option the instruction means is one of them, answer select_option on this "
                   "select with that label, copied exactly; if not, answer the element that has it.\n"
                   f"{self._listed(labels, 'option labels')}")
        self._near_miss("unknown_option", n, answered, problem,
                        f"re-asked with the select's {len(labels)} option label(s)", problems, asked)


def check_elements(elements: Sequence[ObservedElement], snapshot: Snapshot, variables: Mapping[str, str], *,
                   missing_values: bool = False) -> tuple[list[str], list[Action]]:
    """Map the model's elements to Actions with the corrections only (no near-miss re-asks: a
    heal keeps the method it repairs); list what is wrong (unknown id, placeholder, arguments)."""
    return AnswerCheck(snapshot, variables, missing_values=missing_values, reask=False)(elements)


def without_repairs(actions: Sequence[Action]) -> list[Action]:
    """``actions`` as the cache keeps them: what to do, without how the model's answer came to it."""
    return [action.model_copy(update={"repairs": []}) if action.repairs else action for action in actions]


async def note_repairs(client: LLMClient, purpose: str, repairs: Sequence[Repair]) -> None:
    """Write ``repairs`` to the client's inference log (when it keeps one), beside the requests."""
    if repairs:
        await client.log_note(purpose, {"repairs": [repair.model_dump(mode="json") for repair in repairs]})


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
