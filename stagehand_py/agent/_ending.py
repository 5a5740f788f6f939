"""How a run ends: the last model call that turns what was collected into the output when the
run ran out of steps, time or usage (:func:`consolidate`), and the result built once from the
run's state (:func:`finish`)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from .._errors import (
    StagehandError,
    TestDoubleError,
)
from .._prompts import agent as P
from .._prompts.common import Fence
from ..llm import SystemMessage, UserMessage
from ._messages import generate
from ._recording import recording_of, report_of
from ._run import Finished, Run
from ._types import AgentResult, Evidence

__all__ = ["consolidate", "finish"]

logger = logging.getLogger("stagehand_py")


async def consolidate(run: Run, reason: str) -> Finished:
    """The end of a run that ran out of steps, time or usage: one last call turns the collected
    data into the output. The data is never dropped, whatever that call does. A run whose last
    claim failed its checks ends with that claim, ``unverified``."""
    if run.bounced is not None:
        claim = run.bounced
        return Finished(claim.status, f"{claim.message}; then the run stopped: {reason}", output=claim.output, success=False)
    collected = run.collected()
    if collected is None:
        return Finished("failed", f"stopped: {reason}; no data was collected", success=False)
    output: Any = collected
    if run.output is not None:
        fence = Fence()
        system, user = P.consolidation_messages(run.instruction, collected, run.memory, reason, fence)
        try:
            async with asyncio.timeout(run.config.consolidation_timeout):
                generated = await generate(run, [SystemMessage(system), UserMessage(user)],
                                            purpose="agent_consolidate", output=run.output)
            run.usage = run.usage + generated.usage
            output = generated.output
        except TestDoubleError:
            raise
        except (StagehandError, TimeoutError) as exc:
            logger.warning("agent: the consolidation call failed (%s); returning the collected data as is", type(exc).__name__)
    return Finished("partial_success", f"stopped: {reason}; returning the data collected so far", output=output, success=False)


async def finish(run: Run, fin: Finished) -> AgentResult:
    await run.checkpoint(f"finished: {fin.status}", status=fin.status)
    result = AgentResult(
        success=fin.success,
        status=fin.status,
        message=fin.message,
        output=fin.output,
        data=run.data,
        steps=list(run.steps),
        usage=run.usage,
        messages=[{**m, "content": run.redact(m["content"])} for m in run.last_messages],
        evidence=Evidence(
            screenshots=list(run.screenshots),
            checkpoints=list(run.checkpoints),
            blocked=[b.model_copy(update={"url": run.redact(b.url)}) for b in run.guard.blocked] if run.guard is not None else [],
        ),
        recording=await recording_of(run, fin.status, fin.message, fin.output),
        replay=report_of(run),
        checks=list(run.checks),
    )
    logger.info("agent finished: %s after %d step(s): %s", fin.status, run.step, fin.message[:200])
    await run.emit("finished", {"status": fin.status, "message": fin.message}, result=result)
    return result
