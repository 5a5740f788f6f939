"""An agent run as others see it afterwards: each step a named group of a Playwright trace that
records the page (``agent step 3: fill Username``, the verbs it called nested inside), and a step
of the run viewer, whose ``run.html`` goes into ``evidence_dir`` when the run ends.

It listens to the run's own events (:meth:`._run.Run.emit`): ``step_started`` opens a viewer step,
``tool_call`` names it and opens the trace group, ``tool_result`` closes both, ``finished`` adds
what the result knows (the reasoning fields, the checks of a ``done``, the replay report). A
recorder already watching the page's context (the batch row's, the plugin test's) gets the steps;
else, with ``evidence_dir``, one is made for the run.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from .._viewer import RunRecorder, Step, recorder_of, watching, write_run_html
from ..browser._recording import trace_group
from ..llm import Usage
from ..snapshot import parse_line
from ._run import Run
from ._types import AgentEvent, AgentResult

__all__ = ["viewing"]

logger = logging.getLogger("stagehand_py")


def step_title(run: Run, step: int, tool: str, args: dict[str, Any]) -> str:
    """``agent step 3: fill Username``: the tool, and what it acts on as the outline names it."""
    element = str(args.get("element_id") or "")
    line = parse_line(run.line_for(element)) if element else None
    target = (line.name or line.role) if line is not None else ""
    described = {
        "act": f"{args.get('method', 'click')} {target}" if element else f"act {args.get('instruction') or ''}",
        "goto": f"goto {args.get('url', '')}",
        "extract": f"extract {args.get('instruction', '')}",
        "scroll": f"scroll {args.get('direction', 'down')}" + (f" {target}" if target else ""),
        "press_keys": f"press {args.get('keys', '')}",
        "fill_form": f"fill_form ({len(args.get('fields') or [])} fields)",
    }.get(tool, tool)
    return f"agent step {step}: {described.strip()}"


class _StepViewer:
    """The run's event callback (see the module's docstring)."""

    def __init__(self, run: Run, recorder: RunRecorder | None) -> None:
        self.run, self.recorder = run, recorder
        self.group = contextlib.AsyncExitStack()
        self.steps: dict[int, Step] = {}
        self.result: AgentResult | None = None

    async def __call__(self, event: AgentEvent) -> None:
        data, recorder, step = event.data, self.recorder, self.steps.get(event.step)
        if event.type == "step_started":
            await self.close()
            if recorder is not None:
                self.steps[event.step] = recorder.begin(f"agent step {event.step}", agent=True)
        elif event.type == "model_usage" and step is not None:
            step.usage = step.usage + Usage.model_validate(data)
        elif event.type == "tool_call":
            await self.group.aclose()
            given = data.get("args")
            args: dict[str, Any] = given if isinstance(given, dict) else {}
            title = step_title(self.run, event.step, str(data.get("tool", "")), args)
            await self.group.enter_async_context(trace_group(self.run.driver.page, title, self.run.variables))
            if step is not None and recorder is not None:
                step.title = recorder.variables.redact(title)
                step.answer.update({"tool": data.get("tool"), **args, "next_goal": data.get("next_goal", "")})
                recorder.outline_around(step, self.run.snapshot, element_id=str(args.get("element_id") or "") or None)
        elif event.type == "tool_result":
            await self.group.aclose()
            if step is not None and recorder is not None and step.ended is None:
                await recorder.picture_if_none(self.run.driver.page, step)
                recorder.outline_around(step, self.run.snapshot)
                recorder.end(step, ok=bool(data.get("ok")), outcome={"result": data.get("result"),
                                                                     "error_kind": data.get("error_kind")})
        elif event.type == "finished":
            await self.close()
            self.result = event.result

    async def close(self) -> None:
        """Close the open trace group, and the open viewer step (a step cut short by the run's end)."""
        await self.group.aclose()
        if self.recorder is not None and (open_step := self.recorder.open_agent_step) is not None:
            self.recorder.end(open_step, ok=None)

    def add_result(self, result: AgentResult) -> None:
        """What only the result knows: each step's reasoning, the checks of its ``done``, the run's status."""
        if self.recorder is None:
            return
        for done in result.steps:
            step = self.steps.get(done.step)
            if step is None:
                continue
            step.answer.update({"evaluation_previous_step": done.evaluation_previous_step, "memory": done.memory,
                                "next_goal": done.next_goal, "model_fallback": done.model_fallback or None})
            checks = [c.model_dump(mode="json") for c in result.checks if c.step == done.step]
            if checks:
                step.outcome["checks"] = checks
        self.recorder.meta.update({"status": result.status, "message": result.message, "kind": "agent run"})
        if result.replay is not None:
            self.recorder.meta["replay"] = [f"{s.index + 1}. {s.kind} {s.status}: {s.summary}" for s in result.replay.steps]


@contextlib.asynccontextmanager
async def viewing(run: Run) -> AsyncIterator[None]:
    """Around a run: its steps as trace groups and viewer steps; ``run.html`` in ``evidence_dir``."""
    context = run.driver.page.context
    evidence = run.config.evidence_dir
    recorder = recorder_of(context) or (RunRecorder(title=run.redact(run.instruction)[:200]) if evidence else None)
    viewer = _StepViewer(run, recorder)
    run.callbacks.append(viewer)
    try:
        with contextlib.ExitStack() as watched:
            if recorder is not None:
                recorder.hide(run.variables)
                watched.enter_context(watching(context, recorder))
            yield
    finally:
        await viewer.close()
        if viewer.result is not None:
            viewer.add_result(viewer.result)
        if recorder is not None and evidence is not None:
            try:
                write_run_html(recorder, Path(evidence) / "run.html")
            except OSError as exc:  # the run's result stands; its page is a help
                logger.warning("agent: could not write run.html to %s: %r", evidence, exc)
