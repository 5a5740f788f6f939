"""One step of the structured-output protocol: the offered tools as a tagged union, the
model's answer (reflection fields plus one call, or a chain of calls), then the call(s)
(:mod:`._tool_calls`); and :func:`ask_model`, the one way a step asks its model.

Every function takes the run's state explicitly (:class:`._run.Run`); nothing here knows which
mode runs or imports one: a mode's ``step`` is written from these pieces and :mod:`._tool_calls`."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from .._errors import (
    AgentError,
    AuthenticationError,
    BadRequestError,
    LLMError,
    ModelRequestBlockedError,
    TestDoubleError,
    UsageLimitExceededError,
)
from .._prompts.common import Fence
from ._choice_step import ask_choice_step, uses_choice_step
from ._ending import consolidate
from ._messages import build_messages, generate, message_record
from ._run import Mode, PageState, Run
from ._tool_calls import after_failure, record_step, run_chain, run_tool, safety_checks, terminal
from ._tools import TERMINAL_TOOLS, ToolOutcome, ToolSet, step_model
from ._types import SafetyCheck
from .hygiene import (
    classify_error,
    sanitise,
)

__all__ = ["structured_step", "ask_model"]

logger = logging.getLogger("stagehand_py")

T = TypeVar("T")


async def structured_step(
    run: Run, mode: Mode, toolset: ToolSet, state: PageState, notices: list[str], fence: Fence
) -> None:
    """One step through structured output: the offered tools as a tagged union, the model's
    answer (reflection fields plus one call, or a chain of calls), then the call(s)."""
    finish_only = run.budget.is_last(run.step) or run.stall.force_finish
    offered = toolset.offered(finish_only=finish_only)
    chain = 0 if finish_only else min(run.config.max_actions, run.budget.remaining(run.step) + 1) - 1
    if uses_choice_step(run.client, mode.name):  # a small model: it chooses one of the page's actions
        answer_model = step_model(offered, extra_fields=mode.extra_step_fields())
        generated = await ask_model(run, state, lambda: ask_choice_step(run, state, offered, notices, answer_model))
    else:
        answer_model = step_model(offered, extra_fields=mode.extra_step_fields(), more_actions=chain)
        messages = build_messages(run, mode, fence, offered, state, notices, chain=chain)
        run.last_messages = [message_record(m) for m in messages]
        generated = await ask_model(
            run, state, lambda: generate(run, messages, purpose="agent", output=answer_model, output_name="agent_step"))
    if generated is None:
        return
    run.usage = run.usage + generated.usage
    await run.emit("model_usage", generated.usage.model_dump(mode="json"))
    answer = generated.output
    run.memory = answer.memory
    call = answer.action
    tool_name: str = call.tool
    args_model = call.args
    args = args_model.model_dump(mode="json", by_alias=True)

    safety = getattr(answer, "safety_checks", None)
    if safety:
        await safety_checks(run, [SafetyCheck.model_validate(s.model_dump()) for s in safety])

    await run.emit("tool_call", {"tool": tool_name, "args": args, "next_goal": answer.next_goal})
    logger.info("agent step %d/%d: %s %s", run.step, run.max_steps, tool_name, run.redact(json.dumps(sanitise(args), default=str))[:300])

    if tool_name in TERMINAL_TOOLS:
        await terminal(run, answer, tool_name, args_model, state)
        return

    more = list(getattr(answer, "more_actions", None) or [])
    if not more:
        await run_tool(run, toolset, state, answer, tool_name, args_model)
        return
    await run_chain(run, mode, toolset, state, answer, [call, *more])


async def ask_model(run: Run, state: PageState, call: Callable[[], Awaitable[T]]) -> T | None:
    """One model call of a step: a model that cannot be used at all ends the run with an
    :class:`AgentError`, a usage limit consolidates, any other model error is a failed step
    (``None``) counted by the failure tracker."""
    try:
        return await call()
    except (AuthenticationError, BadRequestError, ModelRequestBlockedError, TestDoubleError) as exc:
        raise AgentError(f"the agent's model cannot be used: {type(exc).__name__}: {exc}") from exc
    except UsageLimitExceededError as exc:
        raise await consolidate(run, f"the model usage limit was reached ({exc})") from exc
    except LLMError as exc:
        kind = classify_error(exc)
        await record_step(run, state, None, "(no valid answer)", {}, ToolOutcome(ok=False, text=f"{type(exc).__name__}: {exc}", error=exc))
        after_failure(run, kind, exc)
        return None
