"""The steps of a run: the loop, one step of the structured-output protocol, and the pieces a
mode's own step is built from (asking the model, running a tool, keeping the books, ending).

Every function takes the run's state explicitly (:class:`._run.Run`); nothing here knows
which mode runs or imports one: a mode's ``step`` calls these, and the loop calls the mode.
A new kind of step (a mode of its own) is a ``Mode.step`` written from these pieces.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn, TypeVar

from .._errors import (
    AgentError,
    AuthenticationError,
    BadRequestError,
    LLMError,
    ModelRequestBlockedError,
    ProviderConnectionError,
    RateLimitError,
    ServerError,
    StagehandError,
    TestDoubleError,
    UsageLimitExceededError,
)
from .._prompts import agent as P
from .._prompts.common import Fence
from ..llm import LLMClient, SystemMessage, UserMessage
from ..snapshot import ACTIONABLE_ROLES
from ..tracing._spans import traced_agent_step
from ._choice_step import ask_choice_step, uses_choice_step
from ._messages import build_messages, message_record, notices_for
from ._recording import recording_of, report_of
from ._run import Finished, Mode, PageState, Run, browser_lock
from ._tools import TERMINAL_TOOLS, ToolOutcome, ToolSet, step_model
from ._types import AgentResult, AgentStep, DoneCheck, Evidence, SafetyCheck
from ._verify import check_claim, verdict
from .hygiene import (
    ErrorKind,
    action_signature,
    batch_abort_reason,
    check_done_output,
    classify_error,
    count_actionable,
    is_pagination_control,
    item_count,
    sanitise,
)

__all__ = [
    "after_failure",
    "ask_model",
    "consolidate",
    "finish",
    "generate",
    "record_step",
    "run_loop",
    "run_tool",
    "safety_checks",
    "structured_step",
    "terminal",
]

logger = logging.getLogger("stagehand_py")

T = TypeVar("T")


def model_label(client: LLMClient) -> str:
    return str(getattr(client, "model_name", None) or getattr(getattr(client, "model", None), "model_name", "") or "model")


async def generate(run: Run, messages: list[Any], *, purpose: str, output: Any, output_name: str | None = None) -> Any:
    """One model call of the run: the primary model (with its retries), then -- only when a
    ``fallback_model`` is set and the primary failed on a retryable error (rate limit, server
    error, connection) -- one attempt on the fallback, logged. The final consolidation goes to
    the fallback first when the primary's last call failed."""
    fallback = run.fallback_client
    kwargs: dict[str, Any] = {"purpose": purpose, "output": output, "secrets": run.variables.secret_values()}
    if output_name is not None:
        kwargs["output_name"] = output_name
    run.used_fallback = False
    if fallback is not None and run.primary_failed and purpose == "agent_consolidate":
        logger.warning("agent: final consolidation on the fallback model %s (the primary model's last call failed)",
                       model_label(fallback))
        await run.emit("warning", {"kind": "fallback_model", "purpose": purpose, "reason": "primary failed last"})
        run.used_fallback = True
        return await fallback.generate(messages, **kwargs)
    try:
        generated = await run.client.generate(messages, **kwargs)
    except (RateLimitError, ServerError, ProviderConnectionError) as exc:
        if fallback is None:
            raise
        run.primary_failed = True
        logger.warning(
            "agent step %d: the primary model %s failed after its retries (%s: %s); one attempt on the fallback model %s",
            run.step, model_label(run.client), type(exc).__name__, run.redact(str(exc))[:200], model_label(fallback),
        )
        await run.emit("warning", {"kind": "fallback_model", "purpose": purpose, "error": type(exc).__name__,
                                   "primary": model_label(run.client), "fallback": model_label(fallback)})
        run.used_fallback = True
        return await fallback.generate(messages, **kwargs)
    run.primary_failed = False
    return generated


# --- the loop ---------------------------------------------------------------------------------


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
    state = await mode.capture(run)
    await run.saw(state)
    fence = Fence()  # a fresh nonce for every request
    notices = await notices_for(run, state, fence)
    run.last_url = state.url
    await mode.step(run, toolset, state, notices, fence)


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
    await _run_chain(run, mode, toolset, state, answer, [call, *more])


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


async def run_tool(
    run: Run, toolset: ToolSet, state: PageState, answer: Any, tool_name: str, args_model: Any,
    *, chain: tuple[int, int] | None = None,
) -> ToolOutcome:
    """Run one (non-terminal) tool call and keep the books: step record, failures, pagination."""
    args = args_model.model_dump(mode="json", by_alias=True)
    tool = toolset.tools[tool_name]
    try:
        if tool.browser:
            async with browser_lock(run.driver.page):
                outcome = await tool.run(run, args_model)
        else:
            outcome = await tool.run(run, args_model)
    except (asyncio.CancelledError, TestDoubleError):
        raise  # the run's deadline cancels the step; a broken test script must fail loudly
    except Exception as exc:
        # A tool's own failure is a step the model works around: a verb's timeout
        # (StagehandTimeoutError is a TimeoutError), an element that never became actionable, a
        # navigation error. Only the run's deadline ends the run (it arrives as a cancellation;
        # a TimeoutError once the deadline has passed is that deadline too).
        if isinstance(exc, TimeoutError) and run.budget.out_of_time(time.monotonic()):
            raise
        # Playwright's call log repeats the call (typed text included): the first line says it all.
        message = str(exc).split("\nCall log:", 1)[0].strip()
        outcome = ToolOutcome(ok=False, text=f"{type(exc).__name__}: {message}", error=exc)
    outcome.text = run.redact(outcome.text)
    if outcome.ok and outcome.read and run.config.verify:
        run.pages_seen.tool_result(run.step, outcome.text)
    if outcome.ok and tool_name == "act":
        await _pagination_bonus(run, args_model, outcome)
    if outcome.image is not None:
        run.pending_images.append(outcome.image)
    await record_step(run, state, answer, tool_name, args, outcome, chain=chain)
    if outcome.ok:
        run.failures.success()
    else:
        after_failure(run, classify_error(outcome.error) if outcome.error else "logic", outcome.error)
    return outcome


async def _run_chain(run: Run, mode: Mode, toolset: ToolSet, state: PageState, answer: Any, calls: list[Any]) -> None:
    """A multi-action step: each chained call is its own step, on a fresh capture of the page;
    the chain stops at a failure, the end of the budget, a main-frame navigation, a URL change
    or a shift of more than 20% in the number of actionable elements."""
    page = run.driver.page
    navigations: list[str] = []

    def on_navigated(frame: Any) -> None:
        if frame == page.main_frame:
            navigations.append(frame.url)

    url_before = state.url
    actionable_before = count_actionable("\n".join(run.outline_chunks), ACTIONABLE_ROLES)
    total = len(calls)
    page.on("framenavigated", on_navigated)
    try:
        current = state
        outcome: ToolOutcome | None = None
        for index, call in enumerate(calls, start=1):
            reason: str | None = None
            if index > 1:
                if run.step >= run.max_steps:
                    reason = "no steps remain"
                elif outcome is not None and not outcome.ok:
                    reason = "the previous action failed"
                else:
                    current = await mode.capture(run)  # a fresh outline for this sub-action
                    reason = batch_abort_reason(
                        url_before=url_before, url_now=current.url, navigations=len(navigations),
                        actionable_before=actionable_before,
                        actionable_now=count_actionable("\n".join(run.outline_chunks), ACTIONABLE_ROLES),
                    )
                if reason is not None:
                    skipped = [c.tool for c in calls[index - 1:]]
                    logger.info("agent step %d: multi-action chain stopped after %d of %d actions: %s",
                                run.step, index - 1, total, reason)
                    await run.emit("warning", {"kind": "multi_action_aborted", "reason": reason, "skipped": skipped,
                                               "ran": index - 1, "chained": total})
                    run.notices.append(P.multi_action_aborted(reason, skipped))
                    return
                run.step += 1
                run.last_url = current.url
                await run.saw(current)
                await run.emit("step_started", {"max_steps": run.max_steps, "chain": [index, total]})
                await run.emit("tool_call", {"tool": call.tool, "args": call.args.model_dump(mode="json", by_alias=True),
                                             "chain": [index, total]})
                logger.info("agent step %d/%d: %s (chained action %d of %d)", run.step, run.max_steps, call.tool, index, total)
            outcome = await run_tool(run, toolset, current, answer, call.tool, call.args, chain=(index, total))
    finally:
        page.remove_listener("framenavigated", on_navigated)


async def _pagination_bonus(run: Run, args: Any, outcome: ToolOutcome) -> None:
    """A click on a recognised "next page" / "load more" control grants bonus steps (bounded)."""
    per_click = run.config.pagination_bonus_steps
    if per_click <= 0:
        return
    element_id = getattr(args, "element_id", None)
    label = run.line_for(element_id) if element_id else (getattr(args, "instruction", None) or "")
    if getattr(args, "method", "click") != "click" or not label or not is_pagination_control(label):
        return
    bonus = min(per_click, run.config.max_pagination_bonus - run.pagination_bonus)
    if bonus <= 0:
        logger.info("agent step %d: pagination click, but the pagination bonus is used up (%d steps)", run.step, run.pagination_bonus)
        return
    run.pagination_bonus += bonus
    run.max_steps += bonus
    run.budget.max_steps += bonus
    logger.info("agent step %d: pagination control clicked (%s): +%d bonus steps, budget now %d",
                run.step, label[:80], bonus, run.max_steps)
    await run.emit("warning", {"kind": "pagination_bonus", "bonus": bonus, "total_bonus": run.pagination_bonus,
                               "max_steps": run.max_steps})
    outcome.text = f"{outcome.text} {P.pagination_bonus_note(bonus, run.max_steps)}"


def after_failure(run: Run, kind: ErrorKind, exc: BaseException | None) -> None:
    """Count a failed step; the circuit breaker ends the run with what was collected."""
    state = run.failures.failure(kind)
    if state.tripped:
        detail = f"{type(exc).__name__}: {run.redact(str(exc))}" if exc is not None else "unknown"
        collected = run.collected()
        raise Finished(
            "partial_success" if collected is not None else "failed",
            f"circuit breaker: {state.consecutive_infrastructure} infrastructure failures in a row (last: {detail})",
            output=collected, success=False,
        )


async def record_step(
    run: Run, state: PageState, answer: Any, tool: str, args: dict[str, Any], outcome: ToolOutcome,
    *, chain: tuple[int, int] | None = None,
) -> None:
    kind = None if outcome.ok else (classify_error(outcome.error) if outcome.error else "logic")
    step = AgentStep(
        step=run.step,
        evaluation_previous_step=getattr(answer, "evaluation_previous_step", ""),
        memory=getattr(answer, "memory", ""),
        next_goal=getattr(answer, "next_goal", ""),
        tool=tool,
        args=sanitise(run.redact_data(args)),
        ok=outcome.ok,
        result=sanitise(run.redact(outcome.text)),
        error_kind=kind,
        url=run.redact(state.url),
        model_fallback=run.used_fallback and answer is not None,
        chain=chain,
    )
    run.steps.append(step)
    run.last_action = action_signature(tool, args)
    run.last_signature = state.signature
    await run.emit("tool_result", {"tool": tool, "ok": outcome.ok, "result": step.result, "error_kind": kind})


async def terminal(run: Run, answer: Any, tool: str, args: Any, state: PageState) -> None:
    remaining = run.budget.remaining(run.step)
    if tool == "fail":
        await record_step(run, state, answer, tool, args.model_dump(mode="json"), ToolOutcome(ok=True, text=args.reason))
        raise Finished("failed", run.redact(args.reason), output=run.collected(), success=False)
    output = run.redact_data(getattr(args, "output", None))
    value, problems = check_done_output(output, run.output)
    dumped = args.model_dump(mode="json")
    if problems:
        if run.config.verify:
            run.checks.append(DoneCheck(check="schema", step=run.step, passed=False, detail="; ".join(problems)[:500]))
        text = P.done_rejected(problems, remaining)
        await record_step(run, state, answer, tool, dumped, ToolOutcome(ok=False, text=text))
        run.failures.failure("logic")
        if remaining <= 0:
            raise await consolidate(run, "the last done was not valid and no steps remain")
        return
    message = run.redact(args.message)
    if run.config.verify:
        checks = check_claim(run, message, value, schema=run.output is not None)
        if run.config.self_check and not any(c.passed is False for c in checks):
            checks.append(await verdict(run, message, value))
        run.checks.extend(checks)
        failed = [c for c in checks if c.passed is False]
        if failed:
            await _unverified(run, answer, dumped, state, message, value, failed)
            return
    await record_step(run, state, answer, tool, dumped, ToolOutcome(ok=True, text=args.message))
    expected = run.config.expected_items
    count = item_count(output if output is not None else run.data) if expected is not None else None
    if expected is not None and count is not None and count < expected:
        logger.info("agent: done with %d of %d expected items -> partial_success", count, expected)
        raise Finished("partial_success", f"{message} ({count} of {expected} expected items)",
                        output=value, success=False)
    raise Finished("done", message, output=value)


async def _unverified(run: Run, answer: Any, dumped: dict[str, Any], state: PageState, message: str, value: Any,
                      failed: list[DoneCheck]) -> None:
    """A claim that failed its checks: the model gets one more turn with the reasons (one more
    step when none remain); a second such claim ends the run ``unverified``."""
    reasons = [f"{c.check}: {c.detail}" for c in failed]
    claim = Finished("unverified", f"{message} (not verified: {'; '.join(reasons)})", output=value, success=False)
    logger.info("agent step %d: done not verified: %s", run.step, "; ".join(reasons)[:300])
    await run.emit("warning", {"kind": "done_not_verified", "checks": [c.check for c in failed], "reasons": reasons})
    if run.bounced is not None:  # its one more turn was had
        await record_step(run, state, answer, "done", dumped, ToolOutcome(ok=False, text=f"not verified: {'; '.join(reasons)}"))
        raise claim
    run.bounced = claim
    remaining = run.budget.remaining(run.step)
    if remaining <= 0:  # the one more turn, past the step budget
        run.max_steps += 1
        run.budget.max_steps += 1
        remaining = 1
    await record_step(run, state, answer, "done", dumped, ToolOutcome(ok=False, text=f"not verified: {'; '.join(reasons)}"))
    run.notices.append(P.done_unverified(reasons, remaining))
    run.failures.failure("logic")


async def safety_checks(run: Run, checks: list[SafetyCheck]) -> None:
    callback = run.config.on_safety_check
    for check in checks:
        await run.emit("safety_check", check.model_dump())
        acknowledged = False
        if callback is not None:
            value = callback(check)
            acknowledged = bool(await value) if inspect.isawaitable(value) else bool(value)
        if not acknowledged:
            raise Finished(
                "needs_review",
                f"stopped for review: the model raised a safety check ({check.code or 'unnamed'}): {check.message}",
                output=run.collected(), success=False,
            )


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
