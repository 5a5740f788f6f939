"""A scripted agent model: each step is a function of what the model was shown.

``AgentScript([lambda seen: call("goto", url=...), ...])`` answers the agent's step requests
in order. ``seen.outline`` is the page outline exactly as it arrived inside its fence, so a
step can look an element up by role and name (``seen.id("button", "Continue")``) the way a
real model reads the ids. Running out of steps, or an id that is not shown, raises
:class:`TestDoubleError` so a broken scenario fails loudly instead of looking like a
model mistake.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stagehand_py import TestDoubleError
from stagehand_py._prompts.expect import NO_LINE
from stagehand_py.agent._choice_step import schema_choices
from stagehand_py.llm import LLMRequest, TextPart
from stagehand_py.testing import FunctionLLM

_FENCED = re.compile(r"<<<BEGIN UNTRUSTED (\w+) \((?P<label>[^)]*)\)\n(?P<body>.*?)\nEND UNTRUSTED \1>>>", re.DOTALL)


@dataclass
class Seen:
    request: LLMRequest
    system: str
    text: str
    step: int

    def fenced(self, label: str) -> list[str]:
        return [m.group("body") for m in _FENCED.finditer(self.text) if m.group("label") == label]

    @property
    def outline(self) -> str:
        parts = self.fenced("page outline")
        return parts[-1] if parts else ""

    def id(self, role: str, name: str) -> str:
        for line in self.outline.splitlines():
            m = re.match(r"\s*\[(\d+-\d+)\] ([\w ]+): (.*)$", line)
            if m and m.group(2) == role and (m.group(3) == name or m.group(3).startswith(name + " ")):
                return m.group(1)
        raise TestDoubleError(f"step {self.step}: no {role} {name!r} in the outline:\n{self.outline}")

    @property
    def tool_names(self) -> list[str]:
        schema = self.request.output_schema or {}
        action = schema["properties"]["action"]
        variants = action.get("anyOf") or [action]
        names = []
        for v in variants:
            if "$ref" in v:
                v = schema["$defs"][v["$ref"].rsplit("/", 1)[1]]
            names.append(v["properties"]["tool"]["const"])
        return names


def call(tool: str, memory: str = "", **args: Any) -> dict[str, Any]:
    return {
        "evaluation_previous_step": "ok",
        "memory": memory,
        "next_goal": f"use {tool}",
        "action": {"tool": tool, "args": args},
    }


Step = Callable[[Seen], dict[str, Any]]


#: The verdict on a finished run's final page (``self_check``) when a test does not script it:
#: yes, no line named. A test of the verdict answers it itself (:func:`page_verdict`).
PASSING_VERDICT: dict[str, Callable[[LLMRequest], Any]] = {"agent_verdict": lambda r: {"evidence": NO_LINE, "verdict": "yes"}}


class AgentScript(FunctionLLM):
    """Answers ``purpose == "agent"`` requests from ``steps``; other purposes from ``others``
    (the verdict on the final page: yes, unless ``others`` answers it)."""

    def __init__(self, steps: list[Step | dict[str, Any]], *, others: dict[str, Callable[[LLMRequest], Any]] | None = None) -> None:
        self.steps = list(steps)
        self.others = {**PASSING_VERDICT, **(others or {})}
        self.seen: list[Seen] = []
        super().__init__(self._answer, model_name="agent-script")

    def _answer(self, request: LLMRequest) -> Any:
        if request.purpose != "agent":
            if request.purpose not in self.others:
                raise TestDoubleError(f"unexpected {request.purpose!r} request")
            return self.others[request.purpose](request)
        system = "\n".join(p.text for m in request.messages if m.role == "system" for p in m.content)
        text = "\n".join(p.text for m in request.messages if m.role == "user" for p in m.content if isinstance(p, TextPart))
        seen = Seen(request, system, text, len(self.seen) + 1)
        self.seen.append(seen)
        if not self.steps:
            raise TestDoubleError(f"the script ran out at agent step {seen.step}")
        step = self.steps.pop(0)
        return step(seen) if callable(step) else step


def all_text(request: LLMRequest) -> str:
    """Every text the model received in one request (system, user, assistant, tool)."""
    out = []
    for m in request.messages:
        for p in m.content:
            out.append(getattr(p, "text", None) or getattr(p, "content", None) or "")
    return "\n".join(out)


def chooser(plan: list[tuple[str, str]], seen: list[LLMRequest], *,
            others: dict[str, Callable[[LLMRequest], Any]] | None = None) -> FunctionLLM:
    """A small model in choice mode: at agent step i it picks the one offered line containing
    ``plan[i][0]``, with ``plan[i][1]`` as the value; requests of other purposes are answered by
    ``others`` (an ``agent_output`` request gets ``{"parts": ["Anchor", "Drill"]}`` and the
    verdict 'yes' unless given). Every request is appended to ``seen``."""
    answers = {"agent_output": lambda r: {"parts": ["Anchor", "Drill"]}, **PASSING_VERDICT, **(others or {})}

    def answer(request: LLMRequest) -> dict[str, Any]:
        seen.append(request)
        if request.purpose != "agent":
            if request.purpose not in answers:
                raise TestDoubleError(f"unexpected {request.purpose!r} request")
            return answers[request.purpose](request)  # type: ignore[no-any-return]
        options = schema_choices(request.output_schema)  # type: ignore[arg-type]
        step = sum(1 for r in seen if r.purpose == "agent")
        if step > len(plan):
            raise TestDoubleError(f"the plan ran out at agent step {step}")
        wanted, value = plan[step - 1]
        matches = [o for o in options if wanted in o]
        if len(matches) != 1:
            raise TestDoubleError(f"step {step}: {len(matches)} choices contain {wanted!r}: {options}")
        return {"next_goal": wanted[:40], "choice": matches[0], "value": value}

    return FunctionLLM(answer, model_name="small-local")


def offered(seen: list[LLMRequest], step: int) -> list[str]:
    """The choices the agent's ``step``-th request offered, in the order its prompt lists them
    (checked to be exactly those its answer schema allows)."""
    request = [r for r in seen if r.purpose == "agent"][step - 1]
    listed = [m.group("body") for m in _FENCED.finditer(all_text(request)) if m.group("label") == "actions on this page"]
    lines = listed[-1].splitlines()
    allowed = schema_choices(request.output_schema)  # type: ignore[arg-type]
    if sorted(lines) != sorted(allowed):
        raise TestDoubleError(f"step {step}: the prompt lists {lines}, the schema allows {allowed}")
    return lines


def page_verdict(shows: Callable[[str], bool]) -> Callable[[LLMRequest], dict[str, Any]]:
    """An answer to the agent's verdict on its final page (``agent_verdict``): the first page line
    it was shown for which ``shows(line)`` holds is the evidence, with 'yes'; none, 'no'. Reads
    the outline (a large model's request) or the numbered lines (a small model's short one)."""
    def answer(request: LLMRequest) -> dict[str, Any]:
        text = all_text(request)
        bodies = [m.group("body") for m in _FENCED.finditer(text) if m.group("label") in ("page outline", "lines of the page")]
        if not bodies:
            raise TestDoubleError("a verdict request without the page's lines")
        lines = [line.strip() for line in bodies[-1].splitlines() if line.strip()]
        line = next((line for line in lines if shows(line)), None)
        return {"evidence": line or NO_LINE, "verdict": "yes" if line else "no"}

    return answer
