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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._operations._relevance import terms
from .._prompts import agent as P
from .._prompts.choice import choice_line
from .._prompts.common import Fence
from ..llm import GenerateResult, LLMClient, SystemMessage, UserMessage
from ..llm._usage import estimate_tokens
from ..snapshot import parse_outline

if TYPE_CHECKING:
    from ._run import PageState, Run

__all__ = [
    "CHOICE_STEP_BUDGET",
    "StepChoices",
    "ask_choice_step",
    "choice_step_schema",
    "step_choices",
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


def uses_choice_step(client: LLMClient, mode_name: str) -> bool:
    """Whether this agent's steps are choice steps: a choice-mode client in the DOM mode."""
    return mode_name == "dom" and client.choice_mode


@dataclass(frozen=True)
class StepChoices:
    """The actions of one step: each line -> (tool, fixed args, which arg gets ``value``)."""

    actions: dict[str, tuple[str, dict[str, Any], str | None]]

    @property
    def lines(self) -> list[str]:
        return list(self.actions)


def step_choices(outline: str, fence: Fence, *, instruction: str, offered: Sequence[str],
                 max_page_actions: int = MAX_PAGE_ACTIONS) -> StepChoices:
    """The actions a step offers: the outline's actionable lines as click / type / select
    actions (the most relevant to ``instruction`` first, at most ``max_page_actions``), then the
    general actions whose tools are ``offered`` (on the last step only done and fail).

    A native ``<select>`` (a combobox whose options the outline lists) becomes one action per
    option, ``"select: Country = Germany [0-30]"``: the model picks the option instead of writing it.
    """
    actions: dict[str, tuple[str, dict[str, Any], str | None]] = {}
    if "act" in offered:
        wanted = terms(instruction)
        page: list[tuple[int, int, str, tuple[str, dict[str, Any], str | None]]] = []
        elements = parse_outline(outline)
        for order, element in enumerate(elements):
            if not element.actionable or "disabled" in element.flags:
                continue
            parent = next((e for e in reversed(elements[:order]) if e.depth < element.depth), None)
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
            words = set(terms(label.rsplit(" [", 1)[0]))
            score = sum(1 for t in wanted if any(w.startswith(t) or t.startswith(w) for w in words))
            page.append((-score, order, fence.neutralise(label), action))
        kept = sorted(page, key=lambda item: (item[0], item[1]))[:max_page_actions]
        for _, _, label, action in sorted(kept, key=lambda item: item[1]):  # page order reads best
            actions.setdefault(label, action)
    value_of = {"save_progress": "data", "done": "message", "fail": "reason"}
    for label, (tool, args) in GENERAL.items():
        if tool in offered:
            actions[label] = (tool, dict(args), value_of.get(tool))
    return StepChoices(actions)


def choice_step_schema(choices: Sequence[str]) -> dict[str, Any]:
    """The answer: ``{"next_goal": <short>, "choice": <one of choices>, "value": <short>}``."""
    return {
        "type": "object",
        "properties": {
            "next_goal": {"type": "string", "maxLength": GOAL_MAX},
            "choice": {"type": "string", "enum": list(choices)},
            "value": {"type": "string", "maxLength": VALUE_MAX},
        },
        "required": ["next_goal", "choice", "value"],
        "additionalProperties": False,
    }


def page_text(outline: str, *, budget: int) -> str:
    """The outline's lines that are not actions (headings, text, values), within ``budget``
    tokens, in page order: what a small model reads to know where it is and what it found."""
    lines: list[str] = []
    used = 0
    for element in parse_outline(outline):
        if element.actionable or not element.name.strip():
            continue
        text = f"{element.role}: {element.name}" if element.role not in ("StaticText", "text") else element.name
        cost = estimate_tokens(text) + 1
        if used + cost > budget:
            lines.append("(more text below; scroll down to read it)")
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
    for s in recent:
        what = s.next_goal or s.tool
        outcome = "ok" if s.ok else "FAILED"
        lines.append(f"step {s.step}: {s.tool} ({what[:60]}) -> {outcome}: {s.result[:100]}")
    return "\n".join(lines)


def notes_of(run: Run) -> list[str]:
    data = run.data if isinstance(run.data, dict) else {}
    notes = data.get(NOTES_KEY, [])
    return [str(n) for n in notes] if isinstance(notes, list) else []


def build_messages(run: Run, state: PageState, choices: StepChoices, fence: Fence, notices: Sequence[str],
                   *, budget: int = CHOICE_STEP_BUDGET) -> list[Any]:
    """The step's two messages within ``budget`` tokens: the stable system prompt and task
    first (the prompt cache keeps them), then history, notes, page text and the actions."""
    system = P.choice_step_system_prompt(fence)
    task = P.choice_step_task(run.instruction, variables=run.variable_descriptions, max_steps=run.max_steps)

    def state_text(text: str) -> str:
        return P.choice_step_state(
            step=run.step, max_steps=run.max_steps, history=_history(run), notes=notes_of(run)[-8:],
            url=run.redact(state.url), title=run.redact(state.title), page_text=text, choices=choices.lines,
            fence=fence, notices=notices)

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
    system, user = P.choice_step_output_messages(
        run.instruction, notes=notes_of(run), result=result,
        page_text=page_text(state.outline or "", budget=CHOICE_STEP_BUDGET), fence=fence)
    generated = await client.generate([SystemMessage(system), UserMessage(user)], purpose="agent_output",
                                      output=run.output_schema, output_name="agent_output", secrets=run.secrets)
    return generated.output, generated.usage


async def ask_choice_step(run: Run, state: PageState, offered: Sequence[Any], notices: Sequence[str],
                          answer_model: type[Any]) -> GenerateResult[Any]:
    """One choice step: the model chooses, and the choice comes back as ``answer_model`` (the
    ordinary step answer for the ``offered`` tools), with the usage of every call it took."""
    client: LLMClient = run.client
    fence = Fence()
    names = [t.name for t in offered]
    choices = step_choices(state.outline or "", fence, instruction=run.instruction, offered=names)
    messages = build_messages(run, state, choices, fence, notices)
    run.last_messages = [{"role": m.role, "content": "\n".join(p.text for p in m.content)} for m in messages]
    generated = await client.generate(messages, purpose="agent", output=choice_step_schema(choices.lines),
                                      output_name="agent_choice", secrets=run.secrets)
    tool, args = to_step_answer(generated.output, choices, run)
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
