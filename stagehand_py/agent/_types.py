"""Public value types of the agent (the result, its evidence, events, the judge's verdict) and
the :class:`Driver` protocol: what the agent needs from the browser."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from .._types import BlockedRequest
from ..llm import Usage
from ._recording import ReplayReport, RunRecording

if TYPE_CHECKING:
    from playwright.async_api import Page

    from .._types import Action, ActResult, ElementIdentity, Variables
    from ..snapshot import Snapshot

__all__ = [
    "AgentEvent",
    "AgentEventType",
    "AgentMode",
    "AgentResult",
    "AgentStatus",
    "AgentStep",
    "BlockedRequest",
    "CheckpointRecord",
    "DoneCheck",
    "Driver",
    "EvaluateResult",
    "Evidence",
    "SafetyCheck",
    "ScreenshotRecord",
    "ValueRead",
]

#: ``done``: finished, the output validated and the claim checked (``AgentResult.checks``);
#: ``unverified``: the model said it was done, but a check of its claim failed, also after one
#: more turn (the claimed output is in ``output``, the failing check in ``checks`` and the
#: message); ``partial_success``: stopped by the budget, the clock or the circuit breaker with
#: data collected (the data is in ``output``); ``failed``: the model gave up or nothing usable
#: was collected; ``needs_review``: stopped for a person (a computer-use safety check that was
#: not acknowledged).
AgentStatus: TypeAlias = Literal["done", "unverified", "partial_success", "failed", "needs_review"]
AgentMode: TypeAlias = Literal["dom", "cua"]

AgentEventType: TypeAlias = Literal[
    "step_started",
    "model_usage",
    "tool_call",
    "tool_result",
    "warning",
    "blocked",
    "checkpoint",
    "safety_check",
    "finished",
]


class AgentStep(BaseModel):
    """One step: what the model thought, which tool it called, and what came of it.

    Arguments and results are as the model wrote / read them: placeholders (``%name%``), never
    variable values; binaries are replaced by a size-and-hash note.
    """

    model_config = ConfigDict(frozen=True)

    step: int
    evaluation_previous_step: str = ""
    memory: str = ""
    next_goal: str = ""
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    ok: bool = True
    result: str = ""
    error_kind: Literal["infrastructure", "logic"] | None = None
    url: str = ""
    #: True when this step's answer came from the agent's ``fallback_model`` (the primary
    #: model's retries were exhausted on a retryable error).
    model_fallback: bool = False
    #: For a multi-action step: ``(k, n)``, this is action k of the n the model chained.
    chain: tuple[int, int] | None = None


class ValueRead(BaseModel):
    """A value a ``done`` claim reported, and where the run read it (redacted, like the claim)."""

    model_config = ConfigDict(frozen=True)

    #: The value as reported, as text.
    value: str
    #: Where it is in the claim: a path in the output (``$.count``, ``$.items[0].name``) or ``message``.
    field: str
    #: How it was found: in the text of a page (``text``; for a count field, a count the page states:
    #: "40 issues"), as a number written another way (``number``: ``1,234.50`` for ``1234.5``), as the
    #: number of rows or items of a table or list on a page that states no count (``row count``), as an address the run visited or a page linked to (``address``), in the
    #: result of one of the agent's own tools (``tool``); ``missing`` when no page the run saw shows it.
    how: Literal["text", "number", "row count", "address", "tool", "missing"]
    #: The step whose page (or tool result) showed it, the latest one; ``None`` when missing.
    step: int | None = None
    #: That page's address.
    url: str = ""


class DoneCheck(BaseModel):
    """One check of a ``done`` claim: which check, on the ``done`` of which step, and what it found.

    ``check``: ``schema`` (the output against the ``output`` schema), ``values`` (every value of the
    output, and each quoted one of the message, found in the text of a page the run saw: see
    ``values``), ``final_state`` (a page the claim names, by its title, heading or address, is the
    page the run ended on), ``agreement`` (each number of the output is one the message states,
    when the message states any), ``verdict`` (``self_check``: a model's yes or no on the final page,
    with the line it read as ``evidence``). ``passed`` is ``None`` when there was nothing to check
    (``detail`` says why)."""

    model_config = ConfigDict(frozen=True)

    check: Literal["schema", "values", "final_state", "agreement", "verdict"]
    step: int
    passed: bool | None
    detail: str
    values: list[ValueRead] = Field(default_factory=list)
    evidence: str = ""


class ScreenshotRecord(BaseModel):
    """A screenshot taken during the run, with its SHA-256 (and file, when an evidence folder was set)."""

    model_config = ConfigDict(frozen=True)

    step: int
    sha256: str
    size: int
    path: str | None = None
    data: bytes = Field(default=b"", repr=False, exclude=True)


class CheckpointRecord(BaseModel):
    """A checkpoint written during the run (``path`` is ``None`` when no checkpoint file was set)."""

    model_config = ConfigDict(frozen=True)

    step: int
    reason: str
    sha256: str
    path: str | None = None


class SafetyCheck(BaseModel):
    """A computer-use safety check raised by the model, surfaced to the caller's callback."""

    model_config = ConfigDict(frozen=True)

    id: str = ""
    code: str = ""
    message: str = ""


class Evidence(BaseModel):
    model_config = ConfigDict(frozen=True)

    screenshots: list[ScreenshotRecord] = Field(default_factory=list)
    checkpoints: list[CheckpointRecord] = Field(default_factory=list)
    blocked: list[BlockedRequest] = Field(default_factory=list)


class AgentResult(BaseModel):
    """What :meth:`Agent.execute` returns. A task that fails is a result, not an exception."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    success: bool
    status: AgentStatus
    message: str
    #: The structured output: an instance of the ``output`` model, data valid against the
    #: ``output`` JSON Schema, the consolidated data of a partial run, or ``None``.
    output: Any = None
    #: Data saved with ``save_progress`` (deep-merged), whatever the status.
    data: Any = None
    steps: list[AgentStep] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    #: The conversation of the last model request, as text (images noted, not included).
    messages: list[dict[str, Any]] = Field(default_factory=list)
    evidence: Evidence = Field(default_factory=Evidence)
    #: The run as replayable steps (placeholders, never values); None for a run that cannot be
    #: replayed (computer-use mode, tab switches, a user tool that drives the browser).
    recording: RunRecording | None = None
    #: When a stored run was replayed: per step replayed / healed / drifted / fresh, and
    #: whether the live agent took over (``fell_back``, with the reason). None for a live run.
    replay: ReplayReport | None = None
    #: Every check of every ``done`` the model called, in order (empty with ``verify=False``):
    #: a ``done`` result passed all of its last claim's; an ``unverified`` one failed one of them.
    checks: list[DoneCheck] = Field(default_factory=list)

    @property
    def actions(self) -> list[AgentStep]:
        """The steps that called a tool other than think/done/fail."""
        return [s for s in self.steps if s.tool not in ("think", "done", "fail")]

    def to_script(self, path: str | os.PathLike[str]) -> Path:
        """Write this run as a Python script on the public API (``act(Action(...), variables=...)``
        per step, ``extract`` with the schema as a pydantic model); its ``run()`` returns how the
        outcome differs from this run's (docs/guides/replay.md). Returns its path."""
        from ._export import write_script

        return write_script(self._replayable(), path, test=False)

    def to_pytest(self, path: str | os.PathLike[str], *, sync: bool = False, expect_done: bool = False) -> Path:
        """Write this run as a pytest test on the plugin's ``stagehand`` fixture (``sync=True``:
        ``stagehand_sync``) that runs with no pytest configuration: it passes with no model while
        nothing drifted, heals a drifted step (recorded to the plugin's cassette) when a model may
        be used, and asserts the outcome with no model: the data read, the URL, title and main
        heading it ended on, the output. ``expect_done=True`` also checks the ``done`` message
        as an ``expect`` claim (its verdict kept in the cassette). Returns its path."""
        from ._export import write_script

        return write_script(self._replayable(), path, test=True, sync=sync, expect_done=expect_done)

    def _replayable(self) -> RunRecording:
        if self.recording is None:
            from .._errors import InvalidArgumentError

            raise InvalidArgumentError(
                "this run has no recording to export: computer-use runs, runs that switched tabs and runs whose "
                "own tools drove the browser are not recorded. Export a DOM-mode run."
            )
        return self.recording


class AgentEvent(BaseModel):
    """A progress event: ``type``, the step it belongs to, and sanitised details in ``data``."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    type: AgentEventType
    step: int
    data: dict[str, Any] = Field(default_factory=dict)
    #: Set on the ``finished`` event only.
    result: AgentResult | None = None


class EvaluateResult(BaseModel):
    """The judge's verdict on a yes/no question about the page (:meth:`Stagehand.evaluate`)."""

    model_config = ConfigDict(frozen=True)

    verdict: Literal["yes", "no", "invalid"]
    reasoning: str
    usage: Usage = Field(default_factory=Usage)

    def __bool__(self) -> bool:
        return self.verdict == "yes"


class Driver(Protocol):
    """What the agent needs from the browser: the page, its outline, and the verbs.

    :class:`stagehand_py.Stagehand` is one; the agent never imports it (Stagehand builds agents,
    so the agent importing it back would tie the two into a cycle). Tools that ask for the
    browser receive the driver the agent runs on.
    """

    @property
    def page(self) -> Page: ...

    async def snapshot(self) -> Snapshot: ...

    async def act(self, action: Action | str, /, *, variables: Variables | None = None,
                  element: ElementIdentity | None = None) -> ActResult:
        """Run ``action`` (or an instruction); ``element``: the element an Action was chosen on,
        which the page must still show at its selector (see :meth:`stagehand_py.Stagehand.act`)."""
        ...

    async def observe(self, instruction: str | None = None, /, *, variables: Variables | None = None) -> list[Action]: ...

    async def extract(self, instruction: str | None = None, schema: dict[str, Any] | None = None, /) -> Any: ...
