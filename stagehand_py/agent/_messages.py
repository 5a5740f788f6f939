"""What the model reads at a step of the structured-output protocol: the loop's notices (stall
nudges, budget warnings, failures, blocked addresses, memory notes, a claim that did not check
out) and the step's two messages (system prompt; task, history, page state and images); and
:func:`generate`, the one model call of a run (the primary model, then its fallback)."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._errors import ProviderConnectionError, RateLimitError, ServerError
from .._prompts import agent as P
from .._prompts.common import Fence
from ..llm import ImagePart, LLMClient, SystemMessage, TextPart, UserMessage
from ..snapshot import parse_line
from .hygiene import StallState, history_split, item_count, summarise_steps

if TYPE_CHECKING:
    from ._run import Mode, PageState, Run
    from ._tools import Tool

__all__ = ["build_messages", "generate", "model_label", "message_record", "notices_for", "visible_elements"]

logger = logging.getLogger("stagehand_py")


async def notices_for(run: Run, state: PageState, fence: Fence) -> list[str]:
    """What the loop must tell the model this step, after the stall bookkeeping of the last step."""
    notices: list[str] = []
    if run.last_signature is not None:
        stall: StallState = run.stall.record(before=run.last_signature, after=state.signature, action=run.last_action)
        if stall.nudge is not None:
            notices.append(P.nudge_message(stall.nudge, stall.stalled_steps))
            logger.info("agent step %d: stall nudge level %d (%d stalled steps)", run.step, stall.nudge, stall.stalled_steps)
            await run.emit("warning", {"kind": "stall", "level": stall.nudge, "stalled_steps": stall.stalled_steps})
    for fraction in run.budget.warnings(run.step):
        notices.append(P.budget_warning(fraction, run.budget.remaining(run.step) + 1))
        await run.emit("warning", {"kind": "budget", "fraction": fraction})
    if run.failures.consecutive >= run.failures.show_elements_after:
        notices.append(P.failures_message(run.failures.consecutive, visible_elements(state.outline), fence))
    if run.guard is not None:
        await run.guard.sweep()
        blocked = run.guard.drain()
        if blocked:
            notices.append(P.blocked_message([run.redact(b.url) for b in blocked], run.guard.patterns))
            for b in blocked:
                await run.emit("blocked", run.redact_data(b.model_dump()))
    notices.extend(run.notices)
    run.notices.clear()
    notes = run.config.memory_notes
    if notes and run.step <= run.config.memory_steps:
        notices.append(P.memory_message(notes, fence))
    expected = run.config.expected_items
    count = item_count(run.data) if expected is not None else None
    if expected is not None and count is not None and count >= expected:
        notices.append(P.expected_items_reached(count, expected))
    if run.stall.force_finish:
        notices.append(P.FORCED_FINISH)
    elif run.budget.is_last(run.step):
        notices.append(P.LAST_STEP)
    return notices


def build_messages(
    run: Run, mode: Mode, fence: Fence, offered: Sequence[Tool], state: PageState, notices: list[str], *, chain: int = 0
) -> list[Any]:
    split = history_split(len(run.steps), keep_last=run.config.history_window, summarise_every=run.config.summarise_every)
    older = [s.model_dump() for s in run.steps[:split]]
    recent = [s.model_dump() for s in run.steps[split:]]
    parts: list[Any] = [
        TextPart(text=P.task_message(run.instruction, variables=run.variables.descriptions, max_steps=run.max_steps)),
        TextPart(text="Earlier steps:\n" + P.history_message(summarise_steps(older), recent, fence)),
        TextPart(text=P.state_message(
            step=run.step, max_steps=run.max_steps, url=run.redact(state.url), title=run.redact(state.title), outline=state.outline,
            outline_part=state.outline_part, fence=fence, notices=notices, tabs=state.tabs,
        )),
    ]
    # Images: only this step's (old screenshots are never re-sent).
    for image in [*run.pending_images, *state.images]:
        parts.append(ImagePart(data=image, media_type="image/png"))
    run.pending_images = []
    system = mode.system_prompt(run, fence, offered)
    if chain > 0:
        system += "\n\n" + P.more_actions_rule(chain + 1)
    return [SystemMessage(system), UserMessage(parts)]


def message_record(message: Any) -> dict[str, Any]:
    texts = []
    for part in message.content:
        if isinstance(part, TextPart):
            texts.append(part.text)
        elif isinstance(part, ImagePart):
            texts.append(f"<image {part.media_type} {len(part.data)} bytes sha256:{hashlib.sha256(part.data).hexdigest()[:16]}>")
    return {"role": message.role, "content": "\n".join(texts)}


def visible_elements(outline: str | None, limit: int = 60) -> str:
    if not outline:
        return "(no outline)"
    lines = []
    for line in outline.splitlines():
        text = line.strip()
        element = parse_line(text)
        if element is not None and element.actionable and "disabled" not in element.flags:
            lines.append(text)
    if not lines:
        return "(no actionable elements in the outline)"
    more = f"\n... and {len(lines) - limit} more" if len(lines) > limit else ""
    return "\n".join(lines[:limit]) + more


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
