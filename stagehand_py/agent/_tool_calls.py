"""Running the tools a step's answer calls, and keeping the books of each: the step record, the
failure count and its circuit breaker, pagination bonus steps, a chain of calls, the terminal
tools (``done``, ``fail``; a claim checked before it is reported) and the model's safety checks.

Every function takes the run's state explicitly (:class:`._run.Run`); a mode's step calls these."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from typing import Any

from .._errors import (
    TestDoubleError,
)
from .._prompts import agent as P
from ..snapshot import ACTIONABLE_ROLES
from ._ending import consolidate
from ._run import Finished, Mode, PageState, Run, browser_lock
from ._tools import ToolOutcome, ToolSet
from ._types import AgentStep, DoneCheck, SafetyCheck
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

__all__ = ["run_chain", "run_tool", "after_failure", "record_step", "terminal", "safety_checks"]

logger = logging.getLogger("stagehand_py")


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


async def run_chain(run: Run, mode: Mode, toolset: ToolSet, state: PageState, answer: Any, calls: list[Any]) -> None:
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
                    try:
                        current = await mode.capture(run)  # a fresh outline for this sub-action
                    except Exception as exc:  # the next step captures again (and says why it could not)
                        reason = f"the page could not be captured ({type(exc).__name__})"
                    else:
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
    *, chain: tuple[int, int] | None = None, kind: ErrorKind | None = None,
) -> None:
    if kind is None and not outcome.ok:
        kind = classify_error(outcome.error) if outcome.error else "logic"
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
    run.claim_messages.append(message)
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
