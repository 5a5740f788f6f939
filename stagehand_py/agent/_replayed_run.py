"""One ``execute`` with a stored run: replay it, fall back to the live agent where it cannot
heal or where it did not end as recorded, and store what the run did for next time (see
:mod:`._recording`, :mod:`._replay`)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel

from .._prompts.replay import replay_fallback_notice
from .._util import deep_merge
from ._ending import finish
from ._recording import RecordedStep, RunRecording, RunStore, StepReplay
from ._replay import replay_steps
from ._run import Finished, Run
from ._types import AgentResult, AgentStatus, AgentStep

__all__ = ["run_store", "run_with_recording"]

logger = logging.getLogger("stagehand_py.agent")

#: Folder of stored runs inside a Stagehand's cache directory.
RUNS_FOLDER = "agent-runs"


def run_store(cache_dir: Path | None) -> RunStore | None:
    """The store under a Stagehand's cache directory (``Stagehand(cache_dir=...)``), or None."""
    return RunStore(cache_dir / RUNS_FOLDER) if cache_dir is not None else None


def _output(run: Run, recorded: Any) -> Any:
    if isinstance(run.output, type) and issubclass(run.output, BaseModel):
        return run.output.model_validate(recorded)
    return recorded


def _agent_steps(steps: list[StepReplay], recorded: list[RecordedStep]) -> list[AgentStep]:
    """The replayed steps as :class:`AgentStep`s, so ``result.steps`` reads like a live run's."""
    out = []
    for status, step in zip(steps, recorded, strict=False):
        args: dict[str, Any] = step.model_dump(mode="json", by_alias=True, exclude_defaults=True, exclude={"kind"})
        out.append(AgentStep(step=status.index + 1, tool=step.kind, args=args, ok=True,
                             result=f"{status.status}{': ' + status.detail if status.detail else ''}",
                             next_goal=status.summary))
    return out


async def run_with_recording(run: Run, recording: RunRecording | None, live: Callable[[], Awaitable[AgentResult]],
                             store: RunStore | None) -> AgentResult:
    """Replay ``recording`` (when given), else or after it run ``live``; store the run when it is done."""
    run.start_url = run.driver.page.url if recording is None else recording.start_url
    if recording is None:
        result = await live()
    else:
        outcome = await replay_steps(run.driver, recording, variables=run.variables, heal=True,
                                     check_url=run.check_url_allowed)
        run.recorded.extend(outcome.steps)
        run.extractions.extend(outcome.extractions)
        for saved in (s for s in outcome.steps if s.kind == "save_progress" and isinstance(s.data, dict)):
            run.data = deep_merge(run.data if run.data is not None else {}, saved.data)  # as save_progress keeps it
        run.usage = run.usage + outcome.usage
        report = run.replay_report = outcome.report
        if outcome.complete and not outcome.output_stale and not report.outcome_differences:
            run.steps.extend(_agent_steps(report.steps, outcome.steps))
            run.step = len(run.steps)
            healed = f", {len(report.healed)} healed" if report.healed else ""
            message = f"replayed {len(report.replayed) + len(report.healed)} recorded step(s){healed}: {recording.message}"
            status = cast(AgentStatus, recording.status)
            result = await finish(run, Finished(status, message, output=_output(run, recording.output)))
        else:
            stopped = next((s.index + 1 for s in report.steps if s.status == "drifted"), None) if not outcome.complete else None
            reason = report.reason or (
                "the outcome differs from the recorded run: " + "; ".join(report.outcome_differences)
                if report.outcome_differences else "a fresh extract returned other data than the recorded run")
            logger.info("agent replay stopped (%s); the live agent continues", reason)
            run.notices.append(replay_fallback_notice(len(outcome.steps), len(recording.steps), stopped))
            run.replay_report = report.model_copy(update={"fell_back": True, "reason": reason})
            run.replayed_steps = len(run.recorded)
            result = await live()
    if store is not None and result.recording is not None and result.status == "done":
        store.save(result.recording)
    return result
