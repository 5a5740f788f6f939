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
from typing import TYPE_CHECKING, Any, Protocol, TypeVar
from weakref import WeakKeyDictionary

from pydantic import BaseModel

from .._actions import placeholder_descriptions, secret_values
from .._errors import (
    ActionFailedError,
    AgentError,
    AuthenticationError,
    BadRequestError,
    InvalidArgumentError,
    LLMError,
    ModelRequestBlockedError,
    ProviderConnectionError,
    RateLimitError,
    ServerError,
    StagehandError,
    TestDoubleError,
    UsageLimitExceededError,
)
from .._operations._identity import identity_in
from .._prompts import agent as P
from .._prompts.common import Fence
from .._secrets import redact_text
from .._types import Action, Variables
from ..llm import ImagePart, LLMClient, SystemMessage, TextPart, Usage, UserMessage
from ..snapshot import ACTIONABLE_ROLES, parse_line
from ._domains import DomainGuard
from ._hygiene import (
    FailureTracker,
    StallDetector,
    StallState,
    StepBudget,
    action_signature,
    batch_abort_reason,
    check_done_output,
    classify_error,
    count_actionable,
    deep_merge,
    history_split,
    is_pagination_control,
    item_count,
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

T = TypeVar("T")

EventCallback = Callable[[AgentEvent], Any]
#: Called with each computer-use safety check; return True to acknowledge and continue.
SafetyCallback = Callable[[SafetyCheck], "bool | Awaitable[bool]"]

# Browser tools of all agents on one page run one at a time.
_BROWSER_LOCKS: WeakKeyDictionary[Any, asyncio.Lock] = WeakKeyDictionary()


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
        # Page text that shows a typed secret (or an echo of it: a GET form puts it URL-encoded
        # in the URL and the title) reaches the model and the books as %name%.
        self._secret_values = secret_values(self.variables) if self.variables else []
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
        #: Per-run state of the mode (the native computer-use conversation).
        self.mode_state: Any = None
        #: True while the primary model's last call failed on a retryable error (fallback in use).
        self.primary_failed = False
        self.used_fallback = False
        self.pagination_bonus = 0

    # --- redaction ---------------------------------------------------------------------------

    def redact(self, text: str) -> str:
        return redact_text(text, self.variables) if self._secret_values else text

    def redact_data(self, value: Any) -> Any:
        if not self._secret_values:
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
        return list(self._secret_values)

    @property
    def variable_descriptions(self) -> dict[str, str]:
        return self._descriptions

    # --- browser helpers for tools -------------------------------------------------------------

    def xpath_for(self, element_id: str) -> str:
        xpath_map = getattr(self.snapshot, "xpath_map", None) or {}
        xpath = xpath_map.get(element_id.strip("[] "))
        if not isinstance(xpath, str):
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
        # The element the model chose from this step's outline: act checks the page still shows
        # it at the selector (a page may swap it while the model answers) before acting.
        identity = identity_in(self.snapshot, action.selector, self.variables) if self.snapshot is not None else None
        if identity is not None:
            self.sh._identities[action.selector] = identity
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

    inlined: dict[str, Any] = walk(schema, ())
    return inlined


def _visible_elements(outline: str | None, limit: int = 60) -> str:
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
    """A tool-using browser agent on one Stagehand. Make one with :meth:`Stagehand.agent`.

    Long-horizon options, all off by default:

    - ``fallback_model``: a model (string, model object or :class:`LLMClient`) that gets one
      attempt when the primary model's retries are exhausted on a rate limit, server error or
      connection error; logged, flagged on the step (``model_fallback``), and preferred for the
      final consolidation when the primary's last call failed.
    - ``multi_action=True``: the model may chain up to ``max_actions_per_step`` (3) actions in
      one answer; each runs as its own step on a fresh outline, and the chain stops on a
      navigation, a URL change or a >20% shift in the number of actionable elements.
    - ``pagination_bonus_steps=N``: each click on a recognised "next page" / "load more"
      control adds N steps to the budget, at most ``max_pagination_bonus`` in all.
    - ``expected_items=N``: once ``save_progress`` holds N items the model is told to finish;
      ``done`` with fewer items returns ``partial_success``.
    - ``memory_notes``: short notes (e.g. from earlier samples of a batch run) shown, fenced,
      during the first ``memory_steps`` (3) steps.
    """

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
        fallback_model: Any = None,
        multi_action: bool = False,
        max_actions_per_step: int = 3,
        pagination_bonus_steps: int = 0,
        max_pagination_bonus: int = 20,
        expected_items: int | None = None,
        memory_notes: Sequence[str] = (),
        memory_steps: int = 3,
    ) -> None:
        if mode not in ("dom", "cua"):
            raise InvalidArgumentError(f"mode must be 'dom' or 'cua', not {mode!r}.")
        if multi_action and mode != "dom":
            raise InvalidArgumentError("multi_action needs mode='dom' (computer-use actions are one per step).")
        if max_actions_per_step < 2:
            raise InvalidArgumentError(f"max_actions_per_step must be at least 2, not {max_actions_per_step}.")
        if pagination_bonus_steps < 0 or max_pagination_bonus < 0:
            raise InvalidArgumentError("pagination_bonus_steps and max_pagination_bonus must be 0 or more.")
        if expected_items is not None and expected_items < 1:
            raise InvalidArgumentError(f"expected_items must be at least 1, not {expected_items}.")
        if isinstance(memory_notes, str):
            raise InvalidArgumentError("memory_notes is a list of short notes, not one string.")
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
        self._fallback_client = _fallback_client(sh, fallback_model)
        self._max_actions = max_actions_per_step if multi_action else 1
        self._pagination_bonus_steps = pagination_bonus_steps
        self._max_pagination_bonus = max_pagination_bonus
        self._expected_items = expected_items
        self._memory_notes = [str(n) for n in memory_notes if str(n).strip()]
        self._memory_steps = memory_steps
        if mode == "cua":
            from .cua._mode import CuaMode
            from .cua._native import native_provider

            self._mode: Mode = CuaMode(screen=cua_screen, native=native_provider(client))
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
            run.guard = DomainGuard(self._allowed_domains, main_page=self._sh.page, redact=run.redact)
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


def _fallback_client(sh: Any, model: Any) -> LLMClient | None:
    """The fallback model's client: an :class:`LLMClient` as given, anything else built like the
    Stagehand's own clients but with no retries of its own (the fallback gets one attempt)."""
    if model is None or isinstance(model, LLMClient):
        return model
    config = {k: v for k, v in getattr(sh, "_llm_config", {}).items() if v is not None and k not in ("max_retries", "retry_policy")}
    return LLMClient(model, **config, max_retries=0)


def _model_label(client: LLMClient) -> str:
    return str(getattr(client, "model_name", None) or getattr(getattr(client, "model", None), "model_name", "") or "model")


async def _generate(run: Run, messages: list[Any], *, purpose: str, output: Any, output_name: str | None = None) -> Any:
    """One model call of the run: the primary model (with its retries), then -- only when a
    ``fallback_model`` is set and the primary failed on a retryable error (rate limit, server
    error, connection) -- one attempt on the fallback, logged. The final consolidation goes to
    the fallback first when the primary's last call failed."""
    agent = run.agent
    fallback = agent._fallback_client
    kwargs: dict[str, Any] = {"purpose": purpose, "output": output, "secrets": run.secrets}
    if output_name is not None:
        kwargs["output_name"] = output_name
    run.used_fallback = False
    if fallback is not None and run.primary_failed and purpose == "agent_consolidate":
        logger.warning("agent: final consolidation on the fallback model %s (the primary model's last call failed)",
                       _model_label(fallback))
        await run.emit("warning", {"kind": "fallback_model", "purpose": purpose, "reason": "primary failed last"})
        run.used_fallback = True
        return await fallback.generate(messages, **kwargs)
    try:
        generated = await agent._client.generate(messages, **kwargs)
    except (RateLimitError, ServerError, ProviderConnectionError) as exc:
        if fallback is None:
            raise
        run.primary_failed = True
        logger.warning(
            "agent step %d: the primary model %s failed after its retries (%s: %s); one attempt on the fallback model %s",
            run.step, _model_label(agent._client), type(exc).__name__, run.redact(str(exc))[:200], _model_label(fallback),
        )
        await run.emit("warning", {"kind": "fallback_model", "purpose": purpose, "error": type(exc).__name__,
                                   "primary": _model_label(agent._client), "fallback": _model_label(fallback)})
        run.used_fallback = True
        return await fallback.generate(messages, **kwargs)
    run.primary_failed = False
    return generated


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
    native_step = getattr(mode, "native_step", None)
    if native_step is not None:  # computer use with the provider's own tool
        await native_step(run, toolset, state, notices)
        return

    finish_only = run.budget.is_last(run.step) or run.stall.force_finish
    offered = toolset.offered(finish_only=finish_only)
    chain = 0 if finish_only else min(run.agent._max_actions, run.budget.remaining(run.step) + 1) - 1
    answer_model = step_model(offered, extra_fields=mode.extra_step_fields(), more_actions=chain)
    messages = _build_messages(run, mode, fence, offered, state, notices, chain=chain)
    run.last_messages = [_message_record(m) for m in messages]

    generated = await _ask_model(
        run, state, lambda: _generate(run, messages, purpose="agent", output=answer_model, output_name="agent_step"))
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
        await _safety_checks(run, [SafetyCheck.model_validate(s.model_dump()) for s in safety])

    await run.emit("tool_call", {"tool": tool_name, "args": args, "next_goal": answer.next_goal})
    logger.info("agent step %d/%d: %s %s", run.step, run.max_steps, tool_name, run.redact(json.dumps(sanitise(args), default=str))[:300])

    if tool_name in TERMINAL_TOOLS:
        await _terminal(run, answer, tool_name, args_model, state)
        return

    more = list(getattr(answer, "more_actions", None) or [])
    if not more:
        await _run_tool(run, toolset, state, answer, tool_name, args_model)
        return
    await _run_chain(run, mode, toolset, state, answer, [call, *more])


async def _ask_model(run: Run, state: PageState, call: Callable[[], Awaitable[T]]) -> T | None:
    """One model call of a step: a model that cannot be used at all ends the run with an
    :class:`AgentError`, a usage limit consolidates, any other model error is a failed step
    (``None``) counted by the failure tracker."""
    try:
        return await call()
    except (AuthenticationError, BadRequestError, ModelRequestBlockedError, TestDoubleError) as exc:
        raise AgentError(f"the agent's model cannot be used: {type(exc).__name__}: {exc}") from exc
    except UsageLimitExceededError as exc:
        raise await _consolidate(run, f"the model usage limit was reached ({exc})") from exc
    except LLMError as exc:
        kind = classify_error(exc)
        await _record_step(run, state, None, "(no valid answer)", {}, ToolOutcome(ok=False, text=f"{type(exc).__name__}: {exc}", error=exc))
        _after_failure(run, kind, exc)
        return None


async def _run_tool(
    run: Run, toolset: ToolSet, state: PageState, answer: Any, tool_name: str, args_model: Any,
    *, chain: tuple[int, int] | None = None,
) -> ToolOutcome:
    """Run one (non-terminal) tool call and keep the books: step record, failures, pagination."""
    args = args_model.model_dump(mode="json", by_alias=True)
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
    if outcome.ok and tool_name == "act":
        await _pagination_bonus(run, args_model, outcome)
    if outcome.image is not None:
        run.pending_images.append(outcome.image)
    await _record_step(run, state, answer, tool_name, args, outcome, chain=chain)
    if outcome.ok:
        run.failures.success()
    else:
        _after_failure(run, classify_error(outcome.error) if outcome.error else "logic", outcome.error)
    return outcome


async def _run_chain(run: Run, mode: Mode, toolset: ToolSet, state: PageState, answer: Any, calls: list[Any]) -> None:
    """A multi-action step: each chained call is its own step, on a fresh capture of the page;
    the chain stops at a failure, the end of the budget, a main-frame navigation, a URL change
    or a shift of more than 20% in the number of actionable elements."""
    page = run.sh.page
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
                await run.emit("step_started", {"max_steps": run.max_steps, "chain": [index, total]})
                await run.emit("tool_call", {"tool": call.tool, "args": call.args.model_dump(mode="json", by_alias=True),
                                             "chain": [index, total]})
                logger.info("agent step %d/%d: %s (chained action %d of %d)", run.step, run.max_steps, call.tool, index, total)
            outcome = await _run_tool(run, toolset, current, answer, call.tool, call.args, chain=(index, total))
    finally:
        page.remove_listener("framenavigated", on_navigated)


async def _pagination_bonus(run: Run, args: Any, outcome: ToolOutcome) -> None:
    """A click on a recognised "next page" / "load more" control grants bonus steps (bounded)."""
    per_click = run.agent._pagination_bonus_steps
    if per_click <= 0:
        return
    element_id = getattr(args, "element_id", None)
    label = run.line_for(element_id) if element_id else (getattr(args, "instruction", None) or "")
    if getattr(args, "method", "click") != "click" or not label or not is_pagination_control(label):
        return
    bonus = min(per_click, run.agent._max_pagination_bonus - run.pagination_bonus)
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


async def _record_step(
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
            notices.append(P.blocked_message([run.redact(b.url) for b in blocked], run.guard.patterns))
            for b in blocked:
                await run.emit("blocked", run.redact_data(b.model_dump()))
    notices.extend(run.notices)
    run.notices.clear()
    notes = run.agent._memory_notes
    if notes and run.step <= run.agent._memory_steps:
        notices.append(P.memory_message(notes, fence))
    expected = run.agent._expected_items
    count = item_count(run.data) if expected is not None else None
    if expected is not None and count is not None and count >= expected:
        notices.append(P.expected_items_reached(count, expected))
    if run.stall.force_finish:
        notices.append(P.FORCED_FINISH)
    elif run.budget.is_last(run.step):
        notices.append(P.LAST_STEP)
    return notices


def _build_messages(
    run: Run, mode: Mode, fence: Fence, offered: Sequence[Tool], state: PageState, notices: list[str], *, chain: int = 0
) -> list[Any]:
    split = history_split(len(run.steps), keep_last=run.agent._history_window, summarise_every=run.agent._summarise_every)
    older = [s.model_dump() for s in run.steps[:split]]
    recent = [s.model_dump() for s in run.steps[split:]]
    parts: list[Any] = [
        TextPart(text=P.task_message(run.instruction, variables=run.variable_descriptions, max_steps=run.max_steps)),
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
    expected = run.agent._expected_items
    count = item_count(output if output is not None else run.data) if expected is not None else None
    if expected is not None and count is not None and count < expected:
        logger.info("agent: done with %d of %d expected items -> partial_success", count, expected)
        raise _Finished("partial_success", f"{run.redact(args.message)} ({count} of {expected} expected items)",
                        output=value, success=False)
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
                generated = await _generate(run, [SystemMessage(system), UserMessage(user)],
                                            purpose="agent_consolidate", output=run.output)
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
            blocked=[b.model_copy(update={"url": run.redact(b.url)}) for b in run.guard.blocked] if run.guard is not None else [],
        ),
    )
    logger.info("agent finished: %s after %d step(s): %s", fin.status, run.step, fin.message[:200])
    await run.emit("finished", {"status": fin.status, "message": fin.message}, result=result)
    return result
