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


class AgentScript(FunctionLLM):
    """Answers ``purpose == "agent"`` requests from ``steps``; other purposes from ``others``."""

    def __init__(self, steps: list[Step | dict[str, Any]], *, others: dict[str, Callable[[LLMRequest], Any]] | None = None) -> None:
        self.steps = list(steps)
        self.others = others or {}
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
