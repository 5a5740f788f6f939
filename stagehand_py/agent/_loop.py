"""The agent loop: observe the page, ask the model for one tool call, run it, keep the books.

One :class:`Run` per :meth:`Agent.execute`: it holds the run's state (data, evidence, the
latest snapshot) and the hygiene pieces of :mod:`._hygiene`. The loop is the same for the
DOM and the computer-use modes; a *mode* supplies the tools, the page capture and the
system prompt.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from weakref import WeakKeyDictionary

from pydantic import BaseModel

from .._errors import (
    ActionFailedError,
    AgentError,
    AuthenticationError,
    BadRequestError,
    InvalidArgumentError,
    LLMError,
    ModelRequestBlockedError,
    StagehandError,
    TestDoubleError,
    UsageLimitExceededError,
)
from .._types import Action, Variables
from ..actions import placeholder_descriptions, secret_values
from ..llm import ImagePart, LLMClient, SystemMessage, TextPart, Usage, UserMessage
from ..prompts import agent as P
from ..prompts.common import Fence
from ._domains import DomainGuard
from ._hygiene import (
    FailureTracker,
    StallDetector,
    StallState,
    StepBudget,
    action_signature,
    check_done_output,
    classify_error,
    deep_merge,
    history_split,
    sanitise,
    summarise_steps,
    write_json_atomic,
)
from ._tools import (
    TERMINAL_TOOLS,
    Tool,
    ToolOutcome,
    ToolSet,
    builtin_tools,
    step_model,
    tool_from_function,
)
from ._types import (
    AgentEvent,
    AgentEventType,
    AgentMode,
    AgentResult,
    AgentStatus,
    AgentStep,
    CheckpointRecord,
    Evidence,
    SafetyCheck,
    ScreenshotRecord,
)

if TYPE_CHECKING:
    from .._stagehand import Stagehand

__all__ = ["Agent", "EventCallback", "Run", "SafetyCallback"]

logger = logging.getLogger("stagehand_py")

EventCallback = Callable[[AgentEvent], Any]
#: Called with each computer-use safety check; return True to acknowledge and continue.
SafetyCallback = Callable[[SafetyCheck], "bool | Awaitable[bool]"]

# Browser tools of all agents on one page run one at a time.
_BROWSER_LOCKS: WeakKeyDictionary[Any, asyncio.Lock] = WeakKeyDictionary()

_INTERACTIVE_ROLES = (
    "button", "link", "textbox", "searchbox", "checkbox", "radio", "combobox", "listbox", "option",
    "menuitem", "tab", "switch", "slider", "spinbutton",
)


def _browser_lock(page: Any) -> asyncio.Lock:
    lock = _BROWSER_LOCKS.get(page)
    if lock is None:
        lock = _BROWSER_LOCKS[page] = asyncio.Lock()
    return lock


@dataclass
class PageState:
    """One capture of the page for one step."""

    url: str
    title: str
    signature: str
    outline: str | None = None
    outline_part: tuple[int, int] | None = None
    images: list[bytes] = field(default_factory=list)
    tabs: int = 1


class Mode(Protocol):
    name: AgentMode

    def tools(self, output_schema: dict[str, Any] | None) -> list[Tool]: ...

    def system_prompt(self, run: Run, fence: Fence, offered: Sequence[Tool]) -> str: ...

    async def capture(self, run: Run) -> PageState: ...

    def extra_step_fields(self) -> dict[str, Any]: ...


class _Finished(Exception):
    """Raised inside the loop to end the run with a status."""

    def __init__(self, status: AgentStatus, message: str, *, output: Any = None, success: bool | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.output = output
        self.success = status == "done" if success is None else success


class Run:
    """The state of one ``execute`` call; tools get it as their first argument."""

    def __init__(
        self,
        agent: Agent,
        instruction: str,
        *,
        max_steps: int,
        variables: Variables | None,
        output: type[BaseModel] | dict[str, Any] | None,
        timeout: float | None,
        callbacks: Sequence[EventCallback],
        checkpoint_path: Path | None,
    ) -> None:
        self.agent = agent
        self.sh = agent._sh
        self.instruction = instruction
        self.max_steps = max_steps
        self.variables: dict[str, Any] = dict(variables or {})
        self._descriptions = placeholder_descriptions(self.variables) if self.variables else {}
        # value -> placeholder, longest value first, so page text that shows a typed secret
        # reaches the model (and the books) as %name%.
        values = secret_values(self.variables) if self.variables else []
        by_value = {}
        for name in self.variables:
            v = self.variables[name]
            by_value[str(v["value"] if isinstance(v, Mapping) else v)] = f"%{name}%"
        self._redactions = [(v, by_value[v]) for v in values if v]
        self.output = output
        self.output_schema = _schema_of(output)
        self.callbacks = list(callbacks)
        self.checkpoint_path = checkpoint_path
        self.budget = StepBudget(max_steps, deadline=None if timeout is None else time.monotonic() + timeout)
        self.stall = StallDetector()
        self.failures = FailureTracker(breaker_threshold=agent._breaker_threshold)
        self.data: Any = None
        self.extractions: list[Any] = []
        self.steps: list[AgentStep] = []
        self.screenshots: list[ScreenshotRecord] = []
        self.checkpoints: list[CheckpointRecord] = []
        self.usage = Usage()
        self.memory = ""
        self.step = 0
        self.snapshot: Any = None
        self.outline_chunks: list[str] = []
        self.last_url = ""
        self.pending_images: list[bytes] = []
        self.notices: list[str] = []
        self.last_messages: list[dict[str, Any]] = []
        self.guard: DomainGuard | None = None
        self.last_signature: str | None = None
        self.last_action = ""

    # --- redaction ---------------------------------------------------------------------------

    def redact(self, text: str) -> str:
        for value, placeholder in self._redactions:
            text = text.replace(value, placeholder)
        return text

    def redact_data(self, value: Any) -> Any:
        if not self._redactions:
            return value
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, Mapping):
            return {self.redact(str(k)): self.redact_data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.redact_data(v) for v in value]
        return value

    @property
    def secrets(self) -> list[str]:
        return [v for v, _ in self._redactions]

    @property
    def variable_descriptions(self) -> dict[str, str]:
        return self._descriptions

    # --- browser helpers for tools -------------------------------------------------------------

    def xpath_for(self, element_id: str) -> str:
        xpath_map = getattr(self.snapshot, "xpath_map", None) or {}
        xpath = xpath_map.get(element_id.strip("[] "))
        if xpath is None:
            raise InvalidArgumentError(
                f"element id {element_id!r} is not in the current outline; use an id shown in the latest outline."
            )
        return xpath

    def line_for(self, element_id: str) -> str:
        line_for = getattr(self.snapshot, "line_for", None)
        try:
            return self.redact(line_for(element_id.strip("[] ")) or "") if line_for else ""
        except Exception:  # a description is a nicety
            return ""

    async def execute_action(self, action: Action) -> None:
        result = await self.sh.act(action, variables=self.variables or None)
        if not result.success:
            raise ActionFailedError(self.redact(result.message), selector=action.selector, method=action.method)

    def check_url_allowed(self, url: str) -> None:
        if self.guard is not None and not self.guard.allows(url):
            self.guard.record(url, "navigation")
            raise InvalidArgumentError(
                f"{url} is outside the allowed domains ({', '.join(self.guard.patterns)}); it was not opened."
            )

    def record_screenshot(self, data: bytes) -> ScreenshotRecord:
        digest = hashlib.sha256(data).hexdigest()
        path = None
        if self.agent._evidence_dir is not None:
            folder = Path(self.agent._evidence_dir)
            folder.mkdir(parents=True, exist_ok=True)
            target = folder / f"step-{self.step:03d}-{digest[:12]}.png"
            target.write_bytes(data)
            path = str(target)
        record = ScreenshotRecord(step=self.step, sha256=digest, size=len(data), path=path, data=data)
        self.screenshots.append(record)
        return record

    # --- bookkeeping ----------------------------------------------------------------------------

    async def emit(self, type_: AgentEventType, data: Mapping[str, Any] | None = None, *, result: AgentResult | None = None) -> None:
        event = AgentEvent(type=type_, step=self.step, data=sanitise(self.redact_data(dict(data or {}))), result=result)
        for callback in self.callbacks:
            try:
                value = callback(event)
                if inspect.isawaitable(value):
                    await value
            except Exception as exc:  # a broken progress display must not end a long run
                logger.warning("agent: event callback %r raised %s: %s", callback, type(exc).__name__, exc)

    async def save_progress(self, data: Mapping[str, Any]) -> None:
        self.data = deep_merge(self.data if self.data is not None else {}, self.redact_data(dict(data)))
        await self.checkpoint("save_progress")

    async def checkpoint(self, reason: str, *, status: str = "running") -> CheckpointRecord:
        payload = {
            "instruction": self.redact(self.instruction),
            "reason": reason,
            "status": status,
            "step": self.step,
            "max_steps": self.max_steps,
            "url": self.redact(self.last_url),
            "memory": self.redact(self.memory),
            "data": self.redact_data(self.data),
            "extractions": self.redact_data(self.extractions),
            "steps": [sanitise(s.model_dump(mode="json")) for s in self.steps],
            "variables": sorted(self.variables),  # names only
            "time": time.time(),
        }
        text = json.dumps(payload, sort_keys=True, default=str)
        path = None
        if self.checkpoint_path is not None:
            path = str(await asyncio.to_thread(write_json_atomic, self.checkpoint_path, payload))
        record = CheckpointRecord(step=self.step, reason=reason, sha256=hashlib.sha256(text.encode()).hexdigest(), path=path)
        self.checkpoints.append(record)
        await self.emit("checkpoint", {"reason": reason, "path": path, "sha256": record.sha256})
        return record

    def collected(self) -> Any:
        """Everything collected: the saved data, plus extractions when there are any."""
        if self.extractions and self.data is not None:
            return {"saved": self.data, "extractions": self.extractions}
        if self.extractions:
            return {"extractions": self.extractions}
        return self.data


def _schema_of(output: type[BaseModel] | dict[str, Any] | None) -> dict[str, Any] | None:
    if output is None:
        return None
    if isinstance(output, type) and issubclass(output, BaseModel):
        return _inline_refs(output.model_json_schema())
    if isinstance(output, dict):
        return _inline_refs(output)
    raise InvalidArgumentError(f"output must be a pydantic model class or a JSON Schema dict, not {type(output).__name__}.")


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with local ``#/$defs/...`` references replaced by their definitions, so it can
    be embedded under another schema (``done``'s ``output``). Recursive definitions stay refs."""
    defs = schema.get("$defs") or schema.get("definitions") or {}

    def walk(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(("#/$defs/", "#/definitions/")):
                name = ref.rsplit("/", 1)[1]
                if name in defs and name not in seen:
                    merged = {**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}
                    return walk(merged, (*seen, name))
            return {k: walk(v, seen) for k, v in node.items() if k not in ("$defs", "definitions")}
        if isinstance(node, list):
            return [walk(v, seen) for v in node]
        return node

    return walk(schema, ())


def _visible_elements(outline: str | None, limit: int = 60) -> str:
    if not outline:
        return "(no outline)"
    lines = []
    for line in outline.splitlines():
        text = line.strip()
        role = text.split("] ", 1)[1].split(":", 1)[0].strip() if "] " in text else ""
        if role in _INTERACTIVE_ROLES and "[disabled]" not in text:
            lines.append(text)
    if not lines:
        return "(no actionable elements in the outline)"
    more = f"\n... and {len(lines) - limit} more" if len(lines) > limit else ""
    return "\n".join(lines[:limit]) + more


class DomMode:
    """The DOM mode: the outline in, element-id tool calls out."""

    name: AgentMode = "dom"

    def __init__(self, *, max_outline_tokens: int, use_vision: bool) -> None:
        self.max_outline_tokens = max_outline_tokens
        self.use_vision = use_vision

    def tools(self, output_schema: dict[str, Any] | None) -> list[Tool]:
        return builtin_tools(output_schema)

    def system_prompt(self, run: Run, fence: Fence, offered: Sequence[Tool]) -> str:
        return P.agent_system_prompt(
            fence, [(t.name, t.description) for t in offered], extra=run.agent._system_prompt,
            output_schema=run.output_schema,
        )

    def extra_step_fields(self) -> dict[str, Any]:
        return {}

    async def capture(self, run: Run) -> PageState:
        from ._hygiene import page_signature

        page = run.sh.page
        url = page.url
        try:
            title = await page.title()
        except Exception:  # navigating, closed: the outline capture will say more
            title = ""
        try:
            snapshot = await run.sh.snapshot()
            run.snapshot = snapshot
            tree = run.redact(snapshot.tree)
            chunks = [run.redact(c.text) for c in snapshot.chunks(self.max_outline_tokens)] or [tree]
        except StagehandError as exc:
            run.snapshot = None
            tree = f"(the page could not be captured: {type(exc).__name__}: {run.redact(str(exc))})"
            chunks = [tree]
        run.outline_chunks = chunks
        images = []
        if self.use_vision:
            images.append(await page.screenshot(type="png"))
        return PageState(
            url=url, title=title, signature=page_signature(url, tree), outline=chunks[0],
            outline_part=(1, len(chunks)), images=images, tabs=len(page.context.pages),
        )


class Agent:
    """A tool-using browser agent on one Stagehand. Make one with :meth:`Stagehand.agent`."""

    def __init__(
        self,
        sh: Stagehand,
        *,
        client: LLMClient,
        system_prompt: str | None = None,
        tools: Sequence[Callable[..., Any] | Tool] | None = None,
        mode: AgentMode = "dom",
        allowed_domains: Sequence[str] | None = None,
        checkpoint_path: str | Path | None = None,
        evidence_dir: str | Path | None = None,
        self_check: bool = False,
        use_vision: bool = False,
        max_outline_tokens: int = 6000,
        history_window: int = 8,
        summarise_every: int = 4,
        breaker_threshold: int = 3,
        on_safety_check: SafetyCallback | None = None,
        cua_screen: tuple[int, int] = (1024, 768),
        consolidation_timeout: float = 60.0,
    ) -> None:
        if mode not in ("dom", "cua"):
            raise InvalidArgumentError(f"mode must be 'dom' or 'cua', not {mode!r}.")
        if isinstance(allowed_domains, str):
            raise InvalidArgumentError("allowed_domains is a list of patterns, e.g. ['example.com', '*.example.com'].")
        self._sh = sh
        self._client = client
        self._system_prompt = system_prompt
        self._user_tools = [t if isinstance(t, Tool) else tool_from_function(t) for t in (tools or [])]
        names = [t.name for t in self._user_tools]
        if len(set(names)) != len(names):
            raise InvalidArgumentError(f"tool names must be unique, got {names}.")
        self._mode_name = mode
        self._allowed_domains = list(allowed_domains) if allowed_domains is not None else None
        if self._allowed_domains is not None:
            from ._domains import _parse_pattern

            for p in self._allowed_domains:
                _parse_pattern(p)
        self._checkpoint_path = Path(checkpoint_path) if checkpoint_path is not None else None
        self._evidence_dir = Path(evidence_dir) if evidence_dir is not None else None
        self._self_check = self_check
        self._history_window = history_window
        self._summarise_every = summarise_every
        self._breaker_threshold = breaker_threshold
        self._on_safety_check = on_safety_check
        self._consolidation_timeout = consolidation_timeout
        if mode == "cua":
            from .cua._mode import CuaMode

            self._mode: Mode = CuaMode(screen=cua_screen)
        else:
            self._mode = DomMode(max_outline_tokens=max_outline_tokens, use_vision=use_vision)

    @property
    def mode(self) -> AgentMode:
        return self._mode_name

    async def execute(
        self,
        instruction: str,
        *,
        max_steps: int = 20,
        variables: Variables | None = None,
        output: type[BaseModel] | dict[str, Any] | None = None,
        timeout: float | None = None,
        callbacks: EventCallback | Sequence[EventCallback] | None = None,
        checkpoint_path: str | Path | None = None,
    ) -> AgentResult:
        """Run the task and return an :class:`AgentResult` (a failed task is a result, not an error).

        ``output`` (a pydantic model class or a JSON Schema) is what ``done`` must deliver;
        ``variables`` fill ``%name%`` placeholders at execution time only; ``timeout`` is the
        wall-clock budget in seconds; ``callbacks`` receive every :class:`AgentEvent`.
        Raises :class:`AgentError` when the run cannot start or the model cannot be used at all
        (authentication, a bad request, the kill switch).
        """
        if not isinstance(instruction, str) or not instruction.strip():
            raise InvalidArgumentError("execute() needs a non-empty instruction.")
        if max_steps < 1:
            raise InvalidArgumentError(f"max_steps must be at least 1, not {max_steps}.")
        if timeout is not None and timeout <= 0:
            raise InvalidArgumentError(f"timeout must be a positive number of seconds, not {timeout}.")
        cbs: list[EventCallback] = [] if callbacks is None else [callbacks] if callable(callbacks) else list(callbacks)
        path = Path(checkpoint_path) if checkpoint_path is not None else self._checkpoint_path
        run = Run(self, instruction, max_steps=max_steps, variables=variables, output=output, timeout=timeout,
                  callbacks=cbs, checkpoint_path=path)
        if self._allowed_domains is not None:
            run.guard = DomainGuard(self._allowed_domains, main_page=self._sh.page)
            await run.guard.install()
        try:
            return await _run_loop(run, self._mode, self._tool_set(run))
        finally:
            if run.guard is not None:
                await run.guard.uninstall()

    async def stream(self, instruction: str, **options: Any) -> AsyncIterator[AgentEvent]:
        """Run the task and yield its events as they happen; the last one is ``finished``
        (its ``result`` is the :class:`AgentResult`). Takes the options of :meth:`execute`."""
        queue: asyncio.Queue[AgentEvent | BaseException | None] = asyncio.Queue()
        extra = options.pop("callbacks", None)
        cbs: list[EventCallback] = [] if extra is None else [extra] if callable(extra) else list(extra)

        async def runner() -> None:
            try:
                await self.execute(instruction, callbacks=[*cbs, queue.put_nowait], **options)
                queue.put_nowait(None)
            except BaseException as exc:  # handed to the consumer
                queue.put_nowait(exc)

        task = asyncio.create_task(runner())
        try:
            while True:
                item = await queue.get()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            if not task.done():
                task.cancel()
                try:
                    await task
                except (asyncio.CancelledError, Exception):
                    pass

    def _tool_set(self, run: Run) -> ToolSet:
        tools = {t.name: t for t in self._mode.tools(run.output_schema)}
        for t in self._user_tools:
            if t.name in tools:
                raise InvalidArgumentError(f"tool {t.name!r} has the name of a built-in tool; rename it.")
            tools[t.name] = t
        return ToolSet(tools)


# --- the loop ---------------------------------------------------------------------------------


async def _run_loop(run: Run, mode: Mode, toolset: ToolSet) -> AgentResult:
    try:
        while True:
            run.step += 1
            if run.budget.out_of_time(time.monotonic()):
                run.step -= 1
                raise await _consolidate(run, "the time budget ran out")
            if run.step > run.max_steps:
                run.step -= 1
                raise await _consolidate(run, f"all {run.max_steps} steps were used")
            remaining = None if run.budget.deadline is None else max(0.0, run.budget.deadline - time.monotonic())
            try:
                async with asyncio.timeout(remaining):
                    await _one_step(run, mode, toolset)
            except TimeoutError:
                if run.budget.out_of_time(time.monotonic()):
                    raise await _consolidate(run, "the time budget ran out during a step") from None
                raise
    except _Finished as fin:
        return await _finish(run, fin)


async def _one_step(run: Run, mode: Mode, toolset: ToolSet) -> None:
    await run.emit("step_started", {"max_steps": run.max_steps})
    state = await mode.capture(run)
    fence = Fence()  # a fresh nonce for every request
    notices = await _notices(run, state, fence)
    run.last_url = state.url

    finish_only = run.budget.is_last(run.step) or run.stall.force_finish
    offered = toolset.offered(finish_only=finish_only)
    answer_model = step_model(offered, extra_fields=mode.extra_step_fields())
    messages = _build_messages(run, mode, fence, offered, state, notices)
    run.last_messages = [_message_record(m) for m in messages]

    try:
        generated = await run.agent._client.generate(
            messages, purpose="agent", output=answer_model, secrets=run.secrets, output_name="agent_step"
        )
    except (AuthenticationError, BadRequestError, ModelRequestBlockedError, TestDoubleError) as exc:
        raise AgentError(f"the agent's model cannot be used: {type(exc).__name__}: {exc}") from exc
    except UsageLimitExceededError as exc:
        raise await _consolidate(run, f"the model usage limit was reached ({exc})") from exc
    except LLMError as exc:
        kind = classify_error(exc)
        await _record_step(run, state, None, "(no valid answer)", {}, ToolOutcome(ok=False, text=f"{type(exc).__name__}: {exc}", error=exc))
        _after_failure(run, kind, exc)
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
        await _safety_checks(run, [SafetyCheck.model_validate(s.model_dump()) for s in safety])

    await run.emit("tool_call", {"tool": tool_name, "args": args, "next_goal": answer.next_goal})
    logger.info("agent step %d/%d: %s %s", run.step, run.max_steps, tool_name, run.redact(json.dumps(sanitise(args), default=str))[:300])

    if tool_name in TERMINAL_TOOLS:
        await _terminal(run, answer, tool_name, args_model, state)
        return

    tool = toolset.tools[tool_name]
    try:
        if tool.browser:
            async with _browser_lock(run.sh.page):
                outcome = await tool.run(run, args_model)
        else:
            outcome = await tool.run(run, args_model)
    except (TimeoutError, asyncio.CancelledError):
        raise
    except TestDoubleError:
        raise
    except Exception as exc:
        # Playwright's call log repeats the call (typed text included): the first line says it all.
        message = str(exc).split("\nCall log:", 1)[0].strip()
        outcome = ToolOutcome(ok=False, text=f"{type(exc).__name__}: {message}", error=exc)
    outcome.text = run.redact(outcome.text)
    if outcome.image is not None:
        run.pending_images.append(outcome.image)
    await _record_step(run, state, answer, tool_name, args, outcome)
    if outcome.ok:
        run.failures.success()
    else:
        _after_failure(run, classify_error(outcome.error) if outcome.error else "logic", outcome.error)


def _after_failure(run: Run, kind: str, exc: BaseException | None) -> None:
    state = run.failures.failure(kind)  # type: ignore[arg-type]
    if state.tripped:
        detail = f"{type(exc).__name__}: {run.redact(str(exc))}" if exc is not None else "unknown"
        collected = run.collected()
        raise _Finished(
            "partial_success" if collected is not None else "failed",
            f"circuit breaker: {state.consecutive_infrastructure} infrastructure failures in a row (last: {detail})",
            output=collected, success=False,
        )


async def _record_step(run: Run, state: PageState, answer: Any, tool: str, args: dict[str, Any], outcome: ToolOutcome) -> None:
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
    )
    run.steps.append(step)
    run.last_action = action_signature(tool, args)
    run.last_signature = state.signature
    await run.emit("tool_result", {"tool": tool, "ok": outcome.ok, "result": step.result, "error_kind": kind})


async def _notices(run: Run, state: PageState, fence: Fence) -> list[str]:
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
        notices.append(P.failures_message(run.failures.consecutive, _visible_elements(state.outline), fence))
    if run.guard is not None:
        await run.guard.sweep()
        blocked = run.guard.drain()
        if blocked:
            notices.append(P.blocked_message([b.url for b in blocked], run.guard.patterns))
            for b in blocked:
                await run.emit("blocked", b.model_dump())
    if run.stall.force_finish:
        notices.append(P.FORCED_FINISH)
    elif run.budget.is_last(run.step):
        notices.append(P.LAST_STEP)
    return notices


def _build_messages(run: Run, mode: Mode, fence: Fence, offered: Sequence[Tool], state: PageState, notices: list[str]) -> list[Any]:
    split = history_split(len(run.steps), keep_last=run.agent._history_window, summarise_every=run.agent._summarise_every)
    older = [s.model_dump() for s in run.steps[:split]]
    recent = [s.model_dump() for s in run.steps[split:]]
    parts: list[Any] = [
        TextPart(text=P.task_message(run.instruction, variables=run.variable_descriptions, max_steps=run.max_steps)),
        TextPart(text="Earlier steps:\n" + P.history_message(summarise_steps(older), recent, fence)),
        TextPart(text=P.state_message(
            step=run.step, max_steps=run.max_steps, url=state.url, title=state.title, outline=state.outline,
            outline_part=state.outline_part, fence=fence, notices=notices, tabs=state.tabs,
        )),
    ]
    # Images: only this step's (old screenshots are never re-sent).
    for image in [*run.pending_images, *state.images]:
        parts.append(ImagePart(data=image, media_type="image/png"))
    run.pending_images = []
    return [SystemMessage(mode.system_prompt(run, fence, offered)), UserMessage(parts)]


def _message_record(message: Any) -> dict[str, Any]:
    texts = []
    for part in message.content:
        if isinstance(part, TextPart):
            texts.append(part.text)
        elif isinstance(part, ImagePart):
            texts.append(f"<image {part.media_type} {len(part.data)} bytes sha256:{hashlib.sha256(part.data).hexdigest()[:16]}>")
    return {"role": message.role, "content": "\n".join(texts)}


async def _terminal(run: Run, answer: Any, tool: str, args: Any, state: PageState) -> None:
    remaining = run.budget.remaining(run.step)
    if tool == "fail":
        await _record_step(run, state, answer, tool, args.model_dump(mode="json"), ToolOutcome(ok=True, text=args.reason))
        raise _Finished("failed", run.redact(args.reason), output=run.collected(), success=False)
    output = run.redact_data(getattr(args, "output", None))
    value, problems = check_done_output(output, run.output)
    dumped = args.model_dump(mode="json")
    if problems:
        text = P.done_rejected(problems, remaining)
        await _record_step(run, state, answer, tool, dumped, ToolOutcome(ok=False, text=text))
        run.failures.failure("logic")
        if remaining <= 0:
            raise await _consolidate(run, "the last done was not valid and no steps remain")
        return
    if run.agent._self_check and remaining > 0:
        from ._judge import evaluate_page

        verdict = await evaluate_page(run.sh, run.agent._client, P.self_check_question(run.instruction), screenshot=True)
        run.usage = run.usage + verdict.usage
        if verdict.verdict == "no":
            text = P.self_check_rejected(verdict.reasoning, remaining)
            await _record_step(run, state, answer, tool, dumped, ToolOutcome(ok=False, text=text))
            return
    await _record_step(run, state, answer, tool, dumped, ToolOutcome(ok=True, text=args.message))
    raise _Finished("done", run.redact(args.message), output=value)


async def _safety_checks(run: Run, checks: list[SafetyCheck]) -> None:
    callback = run.agent._on_safety_check
    for check in checks:
        await run.emit("safety_check", check.model_dump())
        acknowledged = False
        if callback is not None:
            value = callback(check)
            acknowledged = bool(await value) if inspect.isawaitable(value) else bool(value)
        if not acknowledged:
            raise _Finished(
                "needs_review",
                f"stopped for review: the model raised a safety check ({check.code or 'unnamed'}): {check.message}",
                output=run.collected(), success=False,
            )


async def _consolidate(run: Run, reason: str) -> _Finished:
    """The end of a run that ran out of steps, time or usage: one last call turns the collected
    data into the output. The data is never dropped, whatever that call does."""
    collected = run.collected()
    if collected is None:
        return _Finished("failed", f"stopped: {reason}; no data was collected", success=False)
    output: Any = collected
    if run.output is not None:
        fence = Fence()
        system, user = P.consolidation_messages(run.instruction, collected, run.memory, reason, fence)
        try:
            async with asyncio.timeout(run.agent._consolidation_timeout):
                generated = await run.agent._client.generate(
                    [SystemMessage(system), UserMessage(user)], purpose="agent_consolidate", output=run.output,
                    secrets=run.secrets,
                )
            run.usage = run.usage + generated.usage
            output = generated.output
        except TestDoubleError:
            raise
        except (StagehandError, TimeoutError) as exc:
            logger.warning("agent: the consolidation call failed (%s); returning the collected data as is", type(exc).__name__)
    return _Finished("partial_success", f"stopped: {reason}; returning the data collected so far", output=output, success=False)


async def _finish(run: Run, fin: _Finished) -> AgentResult:
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
            blocked=list(run.guard.blocked) if run.guard is not None else [],
        ),
    )
    logger.info("agent finished: %s after %d step(s): %s", fin.status, run.step, fin.message[:200])
    await run.emit("finished", {"status": fin.status, "message": fin.message}, result=result)
    return result
