"""The state of one run (:class:`Run`), one capture of the page (:class:`PageState`), what a mode
supplies (:class:`Mode`), and :class:`Finished`, which ends a run with a status.

A :class:`Run` holds everything a step reads: the driver, the clients, the config, the run's
data and books, and the hygiene pieces (:mod:`.hygiene`). The loop and step functions
(:mod:`._loop`, :mod:`._step`, :mod:`._tool_calls`) and tools (:mod:`._tools`) take it explicitly.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from weakref import WeakKeyDictionary

from pydantic import BaseModel

from .._errors import ActionFailedError, InvalidArgumentError, StagehandError
from .._operations._heal import identity_in
from .._secrets import VariableSet
from .._types import Action, ActResult
from .._util import deep_merge, inline_refs, schema_dict, write_json_atomic
from ..browser._guard import GuardLease
from ..llm import LLMClient, Usage
from ._config import AgentConfig
from ._recording import RecordedStep, ReplayReport, recorded_data
from ._types import (
    AgentEvent,
    AgentEventType,
    AgentMode,
    AgentResult,
    AgentStatus,
    AgentStep,
    CheckpointRecord,
    DoneCheck,
    Driver,
    ScreenshotRecord,
)
from ._verify import PagesSeen
from .hygiene import FailureTracker, StallDetector, StepBudget, sanitise

if TYPE_CHECKING:
    from .._prompts.common import Fence
    from ..snapshot import Snapshot
    from ._tools import Tool, ToolSet

__all__ = ["EventCallback", "Finished", "Mode", "PageState", "Run", "browser_lock"]

logger = logging.getLogger("stagehand_py")

EventCallback = Callable[[AgentEvent], Any]

# Browser tools of all agents on one page run one at a time.
_BROWSER_LOCKS: WeakKeyDictionary[Any, asyncio.Lock] = WeakKeyDictionary()


def browser_lock(page: Any) -> asyncio.Lock:
    """The lock browser tools of every agent on ``page`` take, one tool at a time."""
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
    """What a mode supplies to the loop: its tools, its system prompt, the page capture, and the
    step itself (the structured-output step of :mod:`._step`, or a mode's own, such as the
    provider-native computer use)."""

    name: AgentMode

    def tools(self, output_schema: dict[str, Any] | None) -> list[Tool]: ...

    def system_prompt(self, run: Run, fence: Fence, offered: Sequence[Tool]) -> str: ...

    async def capture(self, run: Run) -> PageState: ...

    def extra_step_fields(self) -> dict[str, Any]: ...

    async def step(self, run: Run, toolset: ToolSet, state: PageState, notices: list[str], fence: Fence) -> None: ...


class Finished(Exception):
    """Raised inside the loop to end the run with a status."""

    def __init__(self, status: AgentStatus, message: str, *, output: Any = None, success: bool | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.output = output
        self.success = status == "done" if success is None else success


class Run:
    """The state of one ``execute`` call; step functions and tools get it as their first argument."""

    def __init__(
        self,
        instruction: str,
        *,
        driver: Driver,
        client: LLMClient,
        fallback_client: LLMClient | None,
        config: AgentConfig,
        max_steps: int,
        variables: VariableSet,
        output: type[BaseModel] | dict[str, Any] | None,
        timeout: float | None,
        callbacks: Sequence[EventCallback],
        checkpoint_path: Path | None,
    ) -> None:
        self.driver = driver
        self.client = client
        self.fallback_client = fallback_client
        self.config = config
        self.instruction = instruction
        self.max_steps = max_steps
        #: The run's variables, built once by ``execute``: page text that shows a typed secret (or an
        #: echo of it: a GET form puts it URL-encoded in the URL and the title) reaches the model
        #: and the books as %name%.
        self.variables = variables
        self.output = output
        self.output_schema = _schema_of(output)
        self.callbacks = list(callbacks)
        self.checkpoint_path = checkpoint_path
        self.budget = StepBudget(max_steps, deadline=None if timeout is None else time.monotonic() + timeout)
        self.stall = StallDetector()
        self.failures = FailureTracker(breaker_threshold=config.breaker_threshold)
        self.data: Any = None
        self.extractions: list[Any] = []
        self.steps: list[AgentStep] = []
        self.screenshots: list[ScreenshotRecord] = []
        self.checkpoints: list[CheckpointRecord] = []
        self.usage = Usage()
        self.memory = ""
        self.step = 0
        self.snapshot: Snapshot | None = None
        self.outline_chunks: list[str] = []
        self.last_url = ""
        self.pending_images: list[bytes] = []
        self.notices: list[str] = []
        self.last_messages: list[dict[str, Any]] = []
        self.guard: GuardLease | None = None
        self.last_signature: str | None = None
        #: The page state (its signature) each step began on: step n's action left the page in
        #: the state step n + 1 began on.
        self.page_states: dict[int, str] = {}
        #: The pages the run saw (and its own tools' results), for checking a ``done`` claim; the
        #: checks made so far; and a claim that failed them, waiting for the model's one more turn.
        self.pages_seen = PagesSeen()
        self.checks: list[DoneCheck] = []
        self.bounced: Finished | None = None
        #: The message of each ``done`` claim, in order (redacted): a number one of them stated
        #: stays stated when a later claim drops it (``agreement``).
        self.claim_messages: list[str] = []
        self.last_action = ""
        #: Per-run state of the mode (the native computer-use conversation).
        self.mode_state: Any = None
        #: True while the primary model's last call failed on a retryable error (fallback in use).
        self.primary_failed = False
        self.used_fallback = False
        self.pagination_bonus = 0
        #: The browser steps taken, for replay (:mod:`._recording`); ``unreplayable`` says why a
        #: run cannot be replayed (a tool whose effect is not recorded), or is None.
        self.recorded: list[RecordedStep] = []
        self.unreplayable: str | None = None
        #: Where the run started (the key of its recording), and how a stored run was replayed:
        #: the report, and how many recorded steps ran before the live agent took over.
        self.start_url = ""
        self.replay_report: ReplayReport | None = None
        self.replayed_steps = 0

    async def saw(self, state: PageState) -> None:
        """Keep the books of the page state this step begins on: its signature, and (with
        ``verify``) its text, for checking a ``done`` claim. A mode that shows no outline (the
        computer-use mode) reads the page's outline for it."""
        self.page_states[self.step] = state.signature
        if not self.config.verify:
            return
        snapshot = self.snapshot if state.outline is not None else None
        if state.outline is None:
            try:
                snapshot = await self.driver.snapshot()
            except StagehandError:  # navigating, closed: nothing to remember of this step
                return
        text = self.redact(snapshot.tree) if snapshot is not None else "\n".join(self.outline_chunks)
        links = [self.redact(u) for u in snapshot.url_map.values()] if snapshot is not None else []
        self.pages_seen.record(self.step, signature=state.signature, url=self.redact(state.url),
                               title=self.redact(state.title), text=text, links=links)

    # --- redaction ---------------------------------------------------------------------------

    def redact(self, text: str) -> str:
        return self.variables.redact(text)

    def redact_data(self, value: Any) -> Any:
        return self.variables.redact_data(value)

    # --- browser helpers for tools -------------------------------------------------------------

    def xpath_for(self, element_id: str) -> str:
        xpath = self.snapshot.xpath_map.get(element_id.strip("[] ")) if self.snapshot is not None else None
        if not isinstance(xpath, str):
            raise InvalidArgumentError(
                f"element id {element_id!r} is not in the current outline; use an id shown in the latest outline."
            )
        return xpath

    def line_for(self, element_id: str) -> str:
        """The element's outline line, redacted; empty when unknown (a description is a nicety)."""
        if self.snapshot is None:
            return ""
        return self.redact(self.snapshot.line_for(element_id.strip("[] ")) or "")

    async def execute_action(self, action: Action) -> ActResult:
        # The element the model chose from this step's outline travels with the action: the
        # driver's act checks the page still shows it at the selector (a page may swap it while
        # the model answers) before anything is sent.
        identity = identity_in(self.snapshot, action.selector, self.variables) if self.snapshot is not None else None
        result = await self.driver.act(action, variables=self.variables.given or None, element=identity)
        if not result.success:
            raise ActionFailedError(self.redact(result.message), selector=action.selector, method=action.method)
        self.record_acts(result)
        return result

    def record_acts(self, result: ActResult) -> None:
        """Record the actions ``result`` ran, each with the element it ran on (``result.elements``)."""
        elements = list(result.elements) + [None] * (len(result.actions) - len(result.elements))
        for ran, identity in zip(result.actions, elements, strict=False):
            self.recorded.append(RecordedStep(
                kind="act", action=ran.model_copy(update={"description": _without_id(self.redact(ran.description))}),
                role=identity.role if identity is not None else None,
                name=self.redact(identity.name) if identity is not None else None))

    def check_url_allowed(self, url: str) -> None:
        if self.guard is not None and not self.guard.allows(url):
            self.guard.record(url, "navigation")
            raise InvalidArgumentError(
                f"{url} is outside the allowed domains ({', '.join(self.guard.patterns)}); it was not opened."
            )

    def record_screenshot(self, data: bytes) -> ScreenshotRecord:
        digest = hashlib.sha256(data).hexdigest()
        path = None
        if self.config.evidence_dir is not None:
            folder = Path(self.config.evidence_dir)
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
        self.recorded.append(recorded_data(self, "save_progress", dict(data)))  # a replay checks it on the page
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
            "variables": self.variables.names,  # names only
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


def _without_id(description: str) -> str:
    """An outline line as a description that outlives this snapshot: without its ``[frame-n]`` id."""
    return re.sub(r"^\s*\[\d+-\d+\]\s*", "", description)


def _schema_of(output: type[BaseModel] | dict[str, Any] | None) -> dict[str, Any] | None:
    if output is None:
        return None
    if isinstance(output, dict) or (isinstance(output, type) and issubclass(output, BaseModel)):
        return inline_refs(schema_dict(output))
    raise InvalidArgumentError(f"output must be a pydantic model class or a JSON Schema dict, not {type(output).__name__}.")
