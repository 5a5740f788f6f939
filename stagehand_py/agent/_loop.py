"""The loop of a run: step until a tool, the budget, the clock or the breaker finishes it.

It knows no mode: each step captures the page, works out the loop's notices and calls the mode's
``step`` (:mod:`._step` for the structured-output protocol, :mod:`.modes.cua` for computer use).
Whatever goes wrong leaves as a library error."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import NoReturn

from .._errors import (
    AgentError,
    StagehandError,
)
from .._prompts.common import Fence
from ..tracing._spans import traced_agent_step
from ._ending import consolidate, finish
from ._messages import notices_for
from ._run import Finished, Mode, PageState, Run
from ._tool_calls import after_failure, record_step
from ._tools import ToolOutcome, ToolSet
from ._types import AgentResult

__all__ = ["run_loop"]

logger = logging.getLogger("stagehand_py")


async def run_loop(run: Run, mode: Mode, toolset: ToolSet) -> AgentResult:
    """Step until the run is finished (by a tool, the budget, the clock or the breaker); the
    result is built once, by :func:`finish`. Whatever else goes wrong leaves as a library error:
    a :class:`StagehandError` as it is, anything else as an :class:`AgentError` with its cause."""
    try:
        try:
            await _steps(run, mode, toolset)
        except Finished as fin:
            return await finish(run, fin)
    except StagehandError:
        raise
    except Exception as exc:  # no untyped exception leaves execute(): say where the run stopped
        raise AgentError(f"the agent run stopped at step {run.step} on an unexpected error: "
                         f"{type(exc).__name__}: {run.redact(str(exc))}") from _safe_cause(run, exc)


async def _steps(run: Run, mode: Mode, toolset: ToolSet) -> NoReturn:
    """The steps, until one raises :class:`Finished`."""
    while True:
        run.step += 1
        if run.budget.out_of_time(time.monotonic()):
            run.step -= 1
            raise await consolidate(run, "the time budget ran out")
        if run.step > run.max_steps:
            run.step -= 1
            raise await consolidate(run, f"all {run.max_steps} steps were used")
        remaining = None if run.budget.deadline is None else max(0.0, run.budget.deadline - time.monotonic())
        try:
            async with asyncio.timeout(remaining):
                await traced_agent_step(run.step, lambda: _one_step(run, mode, toolset))
        except TimeoutError as exc:
            if run.budget.out_of_time(time.monotonic()):
                raise await consolidate(run, "the time budget ran out during a step") from None
            raise AgentError(f"agent step {run.step} stopped on a timeout outside any tool: "
                             f"{type(exc).__name__}: {run.redact(str(exc))}") from _safe_cause(run, exc)


def _safe_cause(run: Run, exc: BaseException) -> BaseException:
    """The cause to chain: ``exc``, or a redacted stand-in when its text shows a variable's value
    (a traceback prints the cause)."""
    text = str(exc)
    shown = run.redact(text)
    return exc if shown == text else StagehandError(f"{type(exc).__name__}: {shown}")


async def _one_step(run: Run, mode: Mode, toolset: ToolSet) -> None:
    """What every step does whatever the mode: capture, the loop's notices, then the mode's step."""
    await run.emit("step_started", {"max_steps": run.max_steps})
    try:
        state = await mode.capture(run)
    except Exception as exc:  # a page that cannot be read (crashed, closed, a screenshot timing out)
        await _not_captured(run, exc)
        return
    await run.saw(state)
    fence = Fence()  # a fresh nonce for every request
    notices = await notices_for(run, state, fence)
    run.last_url = state.url
    await mode.step(run, toolset, state, notices, fence)


async def _not_captured(run: Run, exc: Exception) -> None:
    """A capture that failed is a failed step, as a tool's failure is: the next step captures
    again, and the failure budget (its circuit breaker) ends a page that stays unreadable. A
    timeout once the run's deadline has passed is that deadline."""
    if isinstance(exc, TimeoutError) and run.budget.out_of_time(time.monotonic()):
        raise exc
    message = str(exc).split("\nCall log:", 1)[0].strip()  # Playwright's call log repeats the call
    outcome = ToolOutcome(ok=False, text=f"the page could not be captured: {type(exc).__name__}: {message}", error=exc)
    state = PageState(url=run.driver.page.url, title="", signature="")
    # The model cannot fix a page that cannot be read: an infrastructure failure, whatever it says.
    await record_step(run, state, None, "(page not captured)", {}, outcome, kind="infrastructure")
    after_failure(run, "infrastructure", exc)
