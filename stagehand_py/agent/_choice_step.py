"""An agent step a small model can answer: choose one of the actions the page offers.

The ordinary step asks for a tagged union of every tool's arguments plus three free-text
fields over a ~5,000-token prompt; a 1.5B model on a CPU takes minutes to read it and often
writes something that does not validate. The choice step instead:

- lists the page's actionable lines as actions (``"click: button: Sign in [0-12]"``,
  ``"type into: textbox: Username [0-5]"``), most relevant to the task first, plus a few
  general ones (scroll, go back, note, done, fail); the answer's ``choice`` is an enum of
  exactly those, so a grammar-constrained model cannot name anything else;
- asks for one short free field, ``value``, only used where an action needs one (the text to
  type, the option to select, a note, the final answer), and a short ``next_goal``;
- keeps the prompt under a budget suited to the model (:data:`CHOICE_STEP_BUDGET`): the page's
  text lines cut to fit, recent steps one line each, older ones summarised;
- orders the prompt for the prompt cache: the system prompt and the task never change during a
  run, so each step pays only for the history and the page.

The chosen action becomes the ordinary step answer (``step_model``), so tools, books, stall
detection, checkpoints and ``done`` checks downstream are the same for both steps. Used when
the client's :attr:`~stagehand_py.llm.LLMClient.choice_mode` is on (the profile of ``local/``
models and ``llama_cpp_server_profile()``); large models keep the ordinary step.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._operations._relevance import terms
from .._prompts import agent as P
from .._prompts.choice import choice_line
from .._prompts.common import Fence
from .._usage import estimate_tokens
from ..llm import GenerateResult, LLMClient, SystemMessage, UserMessage
from ..snapshot import SnapshotElement, parse_outline
from ._tools import SCROLL_DID_NOT_MOVE

if TYPE_CHECKING:
    from ._run import PageState, Run

__all__ = [
    "CHOICE_STEP_BUDGET",
    "ChoiceMemory",
    "StepChoices",
    "action_key",
    "ask_choice_step",
    "choice_step_schema",
    "schema_choices",
    "spent_actions",
    "step_choices",
    "untyped_placeholders",
    "uses_choice_step",
]

logger = logging.getLogger("stagehand_py")

#: Tokens of one choice-step prompt: about 20 s of prompt reading on 2 CPU cores at ~50 tokens
#: a second, most of it the page (the system prompt and task come from the prompt cache).
CHOICE_STEP_BUDGET = 1600
#: At most this many page actions are offered (most relevant to the task first).
MAX_PAGE_ACTIONS = 30
#: Longest ``value`` and ``next_goal`` a model may write: small models otherwise ramble.
VALUE_MAX = 200
GOAL_MAX = 80
#: Recent steps shown one line each; older ones become one summary line.
RECENT_STEPS = 4
NOTES_KEY = "notes"

_TYPE_ROLES = {"textbox", "searchbox", "spinbutton"}
#: General actions, always offered after the page's own: label -> (tool, args).
GENERAL = {
    "scroll down": ("scroll", {"direction": "down"}),
    "go back": ("navigate_back", {}),
    "note": ("save_progress", {}),
    "done": ("done", {}),
    "fail": ("fail", {}),
}


#: A page's remembered text (for ``done``'s output): at most this many tokens a page, and the
#: pages seen last within :data:`CHOICE_STEP_BUDGET` in all.
PAGE_MEMORY_TOKENS = 400
#: Roles whose click sets a state (ticked, chosen, open): clicking again undoes it, so once done
#: on a page it is not offered again there. Buttons and links may be pressed again (load more),
#: just not twice in a row.
_STATE_ROLES = {"checkbox", "radio", "switch", "combobox", "option", "tab", "menuitemcheckbox",
                "menuitemradio", "treeitem"}
#: Words of a task that say what to do, not to what: "choose the Pro plan" must not make the
#: option "Choose a country" relevant.
_TASK_VERBS = {"choose", "select", "pick", "click", "press", "tick", "untick", "check", "uncheck", "type",
               "enter", "fill", "open", "follow", "go", "set", "put", "write", "submit", "report", "list",
               "find", "read", "tell", "then"}
#: Roles of the fields a form (or a table's filter) is made of: typed into, chosen, ticked.
_FIELD_ROLES = _TYPE_ROLES | {"combobox", "option", "checkbox", "radio", "switch", "listbox", "slider"}
#: Containers of a table's rows: their links and buttons are the rows' own, not the page's controls.
_TABLE_ROLES = {"table", "grid", "treegrid"}
#: Containers whose buttons and links drive a form or a filter.
_CONTROL_CONTAINERS = {"form", "search"}
#: Words of a control (or of the group, region or form it sits in) that say it filters, searches
#: or submits what the fields hold (not "add" or "save": a list's every item has those).
_CONTROL_WORDS = re.compile(r"\b(filters?|search|find|sort|apply|go|submit|sign in|log in|login)\b", re.IGNORECASE)
#: Order of the offered groups: what the task names, then the page's fields, then the buttons and
#: links that drive a form or a filter, then the rest (page order within each group).
_NAMED, _FIELD, _CONTROL, _OTHER = range(4)
#: Roles of the structure around an element whose name says what its controls are for.
_NAMED_CONTAINERS = {"form", "search", "group", "region", "navigation", "complementary", "toolbar", "radiogroup"}
#: Roles whose parts read as one line (an item's name and price belong together).
_ITEM_ROLES = {"listitem", "row"}
_PLACEHOLDER = re.compile(r"%([A-Za-z_][A-Za-z0-9_]*)%")


@dataclass
class ChoiceMemory:
    """What the choice step keeps for a run (in ``run.mode_state``): the label of the action each
    step chose (the history reads as the model chose) and the text of each page seen (a small
    model forgets to take notes; ``done``'s output is read from these as well)."""

    labels: dict[int, str] = field(default_factory=dict)
    pages: dict[str, str] = field(default_factory=dict)


def memory_of(run: Run) -> ChoiceMemory:
    if not isinstance(run.mode_state, ChoiceMemory):
        run.mode_state = ChoiceMemory()
    return run.mode_state


def uses_choice_step(client: LLMClient, mode_name: str) -> bool:
    """Whether this agent's steps are choice steps: a choice-mode client in the DOM mode."""
    return mode_name == "dom" and client.choice_mode


@dataclass(frozen=True)
class _Candidate:
    """A page action the step may offer, with what decides whether and where it is offered."""

    group: int
    score: int
    sets_state: bool
    done: bool
    order: int
    label: str
    action: tuple[str, dict[str, Any], str | None]


@dataclass(frozen=True)
class StepChoices:
    """The actions of one step: each line -> (tool, fixed args, which arg gets ``value``)."""

    actions: dict[str, tuple[str, dict[str, Any], str | None]]

    @property
    def lines(self) -> list[str]:
        return list(self.actions)


def action_key(tool: str, args: dict[str, Any]) -> Hashable:
    """What makes two actions the same action: the element and method, not the text typed or
    the option chosen: a field typed into once is done (a small model flips a select's options)."""
    if tool == "act":
        return ("act", args.get("element_id"), args.get("method"))
    if tool == "scroll":
        return ("scroll", args.get("direction", "down"))
    return (tool,)


def _ancestry(elements: Sequence[SnapshotElement]) -> list[tuple[SnapshotElement, ...]]:
    """Each element's ancestors in the outline, nearest last."""
    out: list[tuple[SnapshotElement, ...]] = []
    stack: list[SnapshotElement] = []
    for element in elements:
        while stack and stack[-1].depth >= element.depth:
            stack.pop()
        out.append(tuple(stack))
        stack.append(element)
    return out


def _radio_groups(elements: Sequence[SnapshotElement],
                  ancestry: Sequence[tuple[SnapshotElement, ...]] | None = None) -> dict[str, str]:
    """Each radio's group: its nearest ancestor that is a group, a radiogroup or a form (a radio
    sits in its label, so the parent alone would make every radio its own group)."""
    ancestry = ancestry if ancestry is not None else _ancestry(elements)
    groups: dict[str, str] = {}
    for element, ancestors in zip(elements, ancestry, strict=True):
        if element.role == "radio":
            group = next((a for a in reversed(ancestors) if a.role in ("radiogroup", "group", "form")), None)
            groups[element.id] = group.id if group is not None else ""
    return groups


def _offer_group(element: SnapshotElement, name: str, ancestors: Sequence[SnapshotElement], *, named: bool) -> int:
    """Where an action is offered: what the task names first, then the page's fields (a form's,
    a table's filter), then the buttons and links that submit a form or drive a filter or a
    search, then the rest. A table's own rows are never a form or a filter."""
    if named:
        return _NAMED
    if any(a.role in _TABLE_ROLES for a in ancestors):
        return _OTHER
    if element.role in _FIELD_ROLES:
        return _FIELD
    if ((element.role == "button" and any(a.role in _CONTROL_CONTAINERS for a in ancestors))
            or _CONTROL_WORDS.search(name)
            or any(a.role in _NAMED_CONTAINERS and _CONTROL_WORDS.search(a.name) for a in ancestors)):
        return _CONTROL
    return _OTHER


def spent_actions(run: Run, state: PageState) -> set[Hashable]:
    """Actions not to offer again on this page: a small model repeats what it just did (types the
    same name five times, opens and closes a dropdown). Counted since the page's URL changed:
    every state-setting action (typing, selecting, ticking, opening; any radio of a group
    once one is chosen), a note (one a page), a
    scroll that did not move, an action that failed twice; and whatever the last step did, even
    if it failed. And on this page state, every action that left it as it was."""
    url = run.redact(state.url)
    elements = parse_outline(state.outline or "")
    roles = {e.id: e.role for e in elements}
    radios = _radio_groups(elements)
    spent: set[Hashable] = set()
    failed: set[Hashable] = set()
    for position, step in enumerate(reversed(run.steps)):
        if step.url != url:
            break
        key = action_key(step.tool, step.args)
        if not step.ok:
            if position == 0 or key in failed:
                spent.add(key)
            failed.add(key)
            continue
        method = step.args.get("method")
        if position == 0 and not (step.tool == "scroll" and not step.result.startswith(SCROLL_DID_NOT_MOVE)):
            spent.add(key)
        elif step.tool == "act" and (method in ("fill", "select_option", "check", "uncheck", "type")
                                     or roles.get(str(step.args.get("element_id"))) in _STATE_ROLES):
            spent.add(key)
        if step.tool == "act" and str(step.args.get("element_id")) in radios:  # one choice a group
            spent.add(("radio", radios[str(step.args.get("element_id"))]))
        elif step.tool == "save_progress" or (step.tool == "scroll" and step.result.startswith(SCROLL_DID_NOT_MOVE)):
            spent.add(key)
    # An action that changed nothing is not offered again on the page state it left as it was
    # (whatever the URL did before): the same click on the same page would change nothing again.
    for step in run.steps:
        if run.page_states.get(step.step) == state.signature == run.page_states.get(step.step + 1):
            spent.add(action_key(step.tool, step.args))
    return spent


def step_choices(outline: str, fence: Fence, *, instruction: str, offered: Sequence[str],
                 max_page_actions: int = MAX_PAGE_ACTIONS, spent: Collection[Hashable] = (),
                 seen_links: Collection[str] = ()) -> StepChoices:
    """The actions a step offers: the outline's actionable lines as click / type / select
    actions, at most ``max_page_actions``, in the order that fits the task and the page: those
    whose name ``instruction`` mentions, then the page's fields (a form's, a table's filter or
    search), then the buttons and links that submit a form or drive a filter or search, then
    the rest (a table's rows among them); then the general actions whose tools are ``offered``
    (on the last step only done and fail); less the ``spent`` ones (:func:`spent_actions`).
    When every state-setting action (type, select, tick, open) whose name the instruction
    mentions is spent, the unmentioned ones go too.

    A native ``<select>`` (a combobox whose options the outline lists) becomes one action per
    option, ``"select: Country = Germany [0-30]"``: the model picks the option instead of writing it.
    A link in ``seen_links`` (ids of links to pages this run has seen) says so: a small model
    otherwise walks back and forth between "Next" and "Previous".
    """
    actions: dict[str, tuple[str, dict[str, Any], str | None]] = {}
    if "act" in offered:
        wanted = [t for t in terms(instruction) if t not in _TASK_VERBS]
        candidates: list[_Candidate] = []
        elements = parse_outline(outline)
        ancestry = _ancestry(elements)
        radios = _radio_groups(elements, ancestry)
        for order, (element, ancestors) in enumerate(zip(elements, ancestry, strict=True)):
            if not element.actionable or "disabled" in element.flags:
                continue
            following = elements[order + 1] if order + 1 < len(elements) else None
            if (element.role == "combobox" and following is not None and following.role == "option"
                    and following.depth > element.depth):
                continue  # a native select: its options are the actions (clicking it opens nothing)
            parent = ancestors[-1] if ancestors else None
            shown = "" if element.value is None else f' value="{element.value}"'
            line = choice_line(element.role, element.name + shown if element.name else "", element.id, details=shown)
            action: tuple[str, dict[str, Any], str | None]
            if element.role == "option" and parent is not None and parent.role == "combobox":
                line = choice_line("select", f"{parent.name} = {element.name}", parent.id)
                label = line
                action = ("act", {"element_id": parent.id, "method": "select_option", "arguments": [element.name]}, None)
            elif element.role in _TYPE_ROLES:
                label, action = f"type into: {line}", ("act", {"element_id": element.id, "method": "fill"}, "arguments")
            else:
                label, action = f"click: {line}", ("act", {"element_id": element.id, "method": "click"}, None)
                if element.id in seen_links:
                    label = f"{label} (to a page seen before)"
            # Relevance from what the element is called (not from "click"/"type into"/its role:
            # "tab" in a task would make every tab relevant).
            name = line.rsplit(" [", 1)[0].split(": ", 1)[-1]
            words = set(terms(name))
            score = sum(1 for t in wanted if any(w.startswith(t) or t.startswith(w) for w in words))
            sets_state = action[1]["method"] != "click" or element.role in _STATE_ROLES
            done = action_key(*action[:2]) in spent or ("radio", radios.get(element.id)) in spent
            group = _offer_group(element, name, ancestors, named=score > 0)
            candidates.append(_Candidate(group, score, sets_state, done, order, fence.neutralise(label), action))
        # Once every field the task names is set here, the fields it does not name are left
        # alone: a small model otherwise goes on ticking, typing into and opening whatever is
        # left (buttons and links stay: "Continue" is rarely named in a task).
        relevant = [c for c in candidates if c.score > 0 and c.sets_state]
        finished_here = bool(relevant) and all(c.done for c in relevant)
        page = [c for c in candidates if not c.done and not (finished_here and c.score == 0 and c.sets_state)]
        # The most fitting first (what the task names, the fields, the form's and filter's
        # controls), at most max_page_actions; offered in that order, page order within a group.
        kept = sorted(page, key=lambda c: (c.group, -c.score, c.order))[:max_page_actions]
        for c in sorted(kept, key=lambda c: (c.group, c.order)):
            actions.setdefault(c.label, c.action)
    value_of = {"save_progress": "data", "done": "message", "fail": "reason"}
    finish_only = "act" not in offered  # the last step: done stays offered whatever came before
    for label, (tool, args) in GENERAL.items():
        if tool in offered and (action_key(tool, args) not in spent or (finish_only and tool == "done")):
            actions[label] = (tool, dict(args), value_of.get(tool))
    return StepChoices(actions)


def choice_step_schema(choices: StepChoices) -> dict[str, Any]:
    """The answer: ``{"next_goal": <short>, "choice": <one of choices>, "value": <short>}``, where
    ``value`` must be written for an action that needs one (text to type, a note), is free for
    done and fail, and is empty for the rest: a grammar-bound model can neither type nothing
    nor spend tokens on a value a click ignores."""
    needs: list[str] = []
    free: list[str] = []
    empty: list[str] = []
    for label, (_, _, slot) in choices.actions.items():
        (needs if slot in ("arguments", "data") else free if slot is not None else empty).append(label)

    def variant(labels: list[str], value: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "next_goal": {"type": "string", "maxLength": GOAL_MAX},
                "choice": {"type": "string", "enum": labels},
                "value": {"type": "string", **value},
            },
            "required": ["next_goal", "choice", "value"],
            "additionalProperties": False,
        }

    variants = [variant(labels, value) for labels, value in (
        (needs, {"minLength": 1, "maxLength": VALUE_MAX}), (free, {"maxLength": VALUE_MAX}), (empty, {"maxLength": 0}),
    ) if labels]
    return variants[0] if len(variants) == 1 else {"anyOf": variants}


def schema_choices(schema: dict[str, Any]) -> list[str]:
    """Every choice a :func:`choice_step_schema` allows (for tests and tools reading it), also
    when the client sent it wrapped in an object (``{"value": <schema>}``: an ``anyOf`` root)."""
    inner = schema.get("properties", {}).get("value", {})
    if "choice" not in schema.get("properties", {}) and ("anyOf" in inner or "properties" in inner):
        schema = inner
    return [c for v in schema.get("anyOf", [schema]) for c in v["properties"]["choice"]["enum"]]


def page_text(outline: str, *, budget: int, with_actions: bool = False) -> str:
    """The outline's lines that are not actions (headings, text, values), within ``budget``
    tokens, in page order: what a small model reads to know where it is and what it found.
    ``with_actions``: links' and buttons' names too (what the page says, for the output call;
    a step lists them as actions instead). A list item or table row becomes one line,
    ``"- Anchor $10.00"``: read line by line, a small model lost the first item of a list."""
    lines: list[str] = []
    more = "(more text below; scroll down to read it)"
    used = estimate_tokens(more) + 1  # room kept for that line
    elements = parse_outline(outline)
    index = 0
    while index < len(elements):
        element = elements[index]
        index += 1
        if element.role in _ITEM_ROLES and not element.name.strip():
            parts = []
            while index < len(elements) and elements[index].depth > element.depth:
                inner = elements[index]
                index += 1
                if inner.name.strip() and (with_actions or not inner.actionable):
                    parts.append(inner.name.strip())
            if not parts:
                continue
            text = "- " + " ".join(parts)
        elif (element.actionable and not with_actions) or not element.name.strip():
            continue
        else:
            text = f"{element.role}: {element.name}" if element.role not in ("StaticText", "text") else element.name
        cost = estimate_tokens(text) + 1
        if used + cost > budget:
            lines.append(more)
            break
        lines.append(text)
        used += cost
    return "\n".join(lines)


def _history(run: Run) -> str:
    """Recent steps one line each (action -> outcome); older ones counted in one line."""
    steps = run.steps
    older, recent = steps[:-RECENT_STEPS], steps[-RECENT_STEPS:]
    lines = []
    if older:
        failed = sum(1 for s in older if not s.ok)
        lines.append(f"steps 1-{older[-1].step}: {len(older)} actions ({failed} failed); see your notes")
    labels = memory_of(run).labels
    for s in recent:
        what = labels.get(s.step) or s.tool
        typed = s.args.get("arguments") if s.tool == "act" and s.args.get("method") == "fill" else None
        if typed:
            what += f' <- "{str(typed[0])[:60]}"'
        outcome = "ok" if s.ok else "FAILED"
        lines.append(f"step {s.step}: {what} -> {outcome}: {s.result[:100]}")
    return "\n".join(lines)


def untyped_placeholders(run: Run) -> list[str]:
    """The task's ``%name%`` values not typed anywhere yet: a small model presses the button with
    the form half filled; this is said to it at every step until they are typed."""
    named = [f"%{n}%" for n in dict.fromkeys(_PLACEHOLDER.findall(run.instruction)) if n in run.variables]
    typed = " ".join(str(s.args) for s in run.steps if s.ok and s.tool in ("act", "fill_form"))
    return [p for p in named if p not in typed]


def notes_of(run: Run) -> list[str]:
    data = run.data if isinstance(run.data, dict) else {}
    notes = data.get(NOTES_KEY, [])
    return [str(n) for n in notes] if isinstance(notes, list) else []


def build_messages(run: Run, state: PageState, choices: StepChoices, fence: Fence, notices: Sequence[str],
                   *, budget: int = CHOICE_STEP_BUDGET) -> list[Any]:
    """The step's two messages within ``budget`` tokens: the stable system prompt and task
    first (the prompt cache keeps them), then history, notes, page text and the actions."""
    system = P.choice_step_system_prompt(fence, placeholders=bool(run.variables))
    task = P.choice_step_task(run.instruction, variables=run.variables.descriptions, max_steps=run.max_steps)

    def state_text(text: str) -> str:
        return P.choice_step_state(
            step=run.step, max_steps=run.max_steps, history=_history(run), notes=notes_of(run)[-8:],
            url=run.redact(state.url), title=run.redact(state.title), page_text=text, choices=choices.lines,
            fence=fence, notices=notices)

    pending = untyped_placeholders(run)
    if pending:
        notices = [*notices, P.choice_step_untyped(pending)]
    fixed = estimate_tokens(system) + estimate_tokens(task) + estimate_tokens(state_text(""))
    text = page_text(state.outline or "", budget=max(0, budget - fixed))
    return [SystemMessage(system), UserMessage(f"{task}\n\n{state_text(text)}")]


def to_step_answer(answer: dict[str, Any], choices: StepChoices, run: Run) -> tuple[str, dict[str, Any]]:
    """The chosen action as ``(tool, args)`` of the ordinary step."""
    tool, fixed, slot = choices.actions[answer["choice"]]
    value = str(answer.get("value", "")).strip()
    args = dict(fixed)
    if slot == "arguments":
        args["arguments"] = [value]
    elif slot == "data":  # a note: save_progress appends it to the earlier ones and checkpoints
        args["data"] = {NOTES_KEY: [value or answer.get("next_goal", "")]}
    elif slot is not None:
        args[slot] = value or answer.get("next_goal", "") or tool
    return tool, args


async def _done_output(run: Run, client: LLMClient, result: str, state: PageState) -> tuple[Any, Any]:
    """``done``'s structured output, asked for separately (a small model cannot write an arbitrary
    schema inside its choice): from the notes and the last page's text."""
    fence = Fence()
    current = run.redact(state.url)
    earlier: list[tuple[str, str]] = []
    used = 0
    for url, text in reversed([(u, t) for u, t in memory_of(run).pages.items() if u != current]):
        used += estimate_tokens(text)
        if used > CHOICE_STEP_BUDGET:
            break
        earlier.insert(0, (url, text))
    system, user = P.choice_step_output_messages(
        run.instruction, notes=notes_of(run), result=result, earlier_pages=earlier,
        page_text=page_text(state.outline or "", budget=CHOICE_STEP_BUDGET, with_actions=True), fence=fence)
    generated = await client.generate([SystemMessage(system), UserMessage(user)], purpose="agent_output",
                                      output=run.output_schema, output_name="agent_output", secrets=run.variables.secret_values())
    return generated.output, generated.usage


async def ask_choice_step(run: Run, state: PageState, offered: Sequence[Any], notices: Sequence[str],
                          answer_model: type[Any]) -> GenerateResult[Any]:
    """One choice step: the model chooses, and the choice comes back as ``answer_model`` (the
    ordinary step answer for the ``offered`` tools), with the usage of every call it took."""
    client: LLMClient = run.client
    fence = Fence()
    names = [t.name for t in offered]
    memory = memory_of(run)
    text = page_text(state.outline or "", budget=PAGE_MEMORY_TOKENS, with_actions=True)
    if text:
        memory.pages.pop(run.redact(state.url), None)  # re-inserted last: the order is the visit order
        memory.pages[run.redact(state.url)] = text
    links = run.snapshot.url_map if run.snapshot is not None else {}
    here = run.redact(state.url)
    seen = {i for i, url in links.items() if run.redact(url) in memory.pages and run.redact(url) != here}
    choices = step_choices(state.outline or "", fence, instruction=run.instruction, offered=names,
                           spent=spent_actions(run, state), seen_links=seen)
    messages = build_messages(run, state, choices, fence, notices)
    run.last_messages = [{"role": m.role, "content": "\n".join(p.text for p in m.content)} for m in messages]
    generated = await client.generate(messages, purpose="agent", output=choice_step_schema(choices),
                                      output_name="agent_choice", secrets=run.variables.secret_values())
    tool, args = to_step_answer(generated.output, choices, run)
    memory.labels[run.step] = run.redact(generated.output["choice"]).rsplit(" [", 1)[0][:80]
    usage = generated.usage
    if tool == "done" and run.output_schema is not None:
        args["output"], extra = await _done_output(run, client, str(args.get("message", "")), state)
        usage = usage + extra
    goal = str(generated.output.get("next_goal", ""))[:GOAL_MAX]
    step = answer_model.model_validate({
        "evaluation_previous_step": "", "memory": "; ".join(notes_of(run)[-3:]), "next_goal": goal,
        "action": {"tool": tool, "args": args},
    })
    logger.info("agent step %d: choice %r", run.step, run.redact(generated.output["choice"])[:120])
    return GenerateResult(output=step, usage=usage, attempts=generated.attempts, model=generated.model,
                          purpose="agent", raw=generated.raw)
