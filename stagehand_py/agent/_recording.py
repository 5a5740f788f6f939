"""What an agent run did, as steps that replay without a model, and where finished runs are kept.

A :class:`RunRecording` is the ordered list of the browser steps a finished run took: each
navigation (``goto``, ``back``), each act with its :class:`~stagehand_py.Action` (arguments keep
their ``%placeholders%``) and the identity of the element it was chosen on (outline role and
accessible name, redacted), each key press and page scroll, each extract with its instruction,
JSON Schema and the data it returned, and each ``save_progress`` with the data saved (redacted;
with what of it the page showed, :mod:`._outcome`). Then the run's outcome: where it ended (kept
URL, title, main heading: :class:`~._outcome.EndState`, read when it finished) and its output.
Values of variables are never written: the recording holds placeholders and the variables'
*names* only.

:class:`RunStore` keeps recordings as JSON files under the Stagehand's cache directory
(``<cache_dir>/agent-runs/``), one per key: the task, the normalised start URL and the variable
names. Writes are atomic; an unreadable file is a miss (logged), like the action cache.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from playwright.async_api import Error as PlaywrightError
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._errors import CacheError, StagehandError
from .._types import Action
from .._util import normalise_url, write_json_atomic
from ._outcome import EndState, PageView, data_pins, output_pins, prune, view_of

if TYPE_CHECKING:
    from ._run import Run

__all__ = ["FORMAT", "RecordedStep", "ReplayReport", "RunRecording", "RunStore", "StepKind", "StepReplay", "StepStatus",
           "load_recording", "recorded_data", "recording_of", "report_of"]

logger = logging.getLogger("stagehand_py.agent")

FORMAT = "stagehand_py.agent_run/1"

StepKind: TypeAlias = Literal["goto", "back", "act", "press", "scroll", "extract", "save_progress"]


class RecordedStep(BaseModel):
    """One browser step of a run, replayable with no model (an extract is checked against the page)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: StepKind
    #: ``goto``: the URL opened (redacted).
    url: str = ""
    #: ``act``: what ran (after any heal), with ``%placeholders%`` in its arguments.
    action: Action | None = None
    #: ``act``: role and accessible name of the element the action was chosen on.
    role: str | None = None
    name: str | None = None
    #: ``press``: the key or chord; ``scroll``: ``"up"`` or ``"down"``.
    keys: str = ""
    #: ``scroll``: signed pixels.
    pixels: int = 0
    #: ``extract``: the instruction, the JSON Schema (or None) and the data it returned (redacted);
    #: ``save_progress``: the data saved.
    instruction: str = ""
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    data: Any = None
    #: ``extract``/``save_progress``: paths of values the page did not show as written when the
    #: run read them (a count the model worked out): left unpinned; and of objects the page showed
    #: only value by value, not as one row or item (checked apart). See :mod:`._outcome`.
    unshown: list[str] = Field(default_factory=list)
    apart: list[str] = Field(default_factory=list)

    @property
    def pinned(self) -> Any:
        """The data a check compares with the page: ``data`` without the ``unshown`` values."""
        return prune(self.data, self.unshown)

    def summary(self) -> str:
        """One line for reports: what this step does."""
        if self.kind == "goto":
            return f"goto {self.url}"
        if self.kind == "act" and self.action is not None:
            args = f" {self.action.arguments}" if self.action.arguments else ""
            return f"{self.action.method}{args} on {self.role or '?'} {self.name or ''!r}".rstrip()
        if self.kind == "press":
            return f"press {self.keys}"
        if self.kind == "scroll":
            return f"scroll {self.pixels:+d} px"
        if self.kind == "extract":
            return f"extract {self.instruction!r}" if self.instruction else "extract"
        if self.kind == "save_progress":
            return f"save_progress {sorted(self.data) if isinstance(self.data, dict) else ''}".rstrip()
        return self.kind


class RunRecording(BaseModel):
    """A finished run as replayable steps (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: str = FORMAT
    task: str
    start_url: str
    variables: list[str] = Field(default_factory=list)
    steps: list[RecordedStep] = Field(default_factory=list)
    #: The run's final status, message and structured output (redacted), as recorded.
    status: str = "done"
    message: str = ""
    output: Any = None
    #: The JSON Schema of the run's ``output`` (None when the task had none).
    output_schema: dict[str, Any] | None = None
    #: Where the run ended (None: not read, e.g. a recording made before end states were kept),
    #: and what of ``output`` the pages showed (as :attr:`RecordedStep.unshown`/``apart``).
    end: EndState | None = None
    output_unshown: list[str] = Field(default_factory=list)
    output_apart: list[str] = Field(default_factory=list)

    @property
    def key(self) -> str:
        return run_key(self.task, self.start_url, self.variables)


StepStatus: TypeAlias = Literal["replayed", "healed", "fresh", "drifted", "skipped"]


class StepReplay(BaseModel):
    """What became of one recorded step on replay."""

    model_config = ConfigDict(frozen=True)

    index: int
    kind: StepKind
    status: StepStatus
    summary: str
    #: For an act that drifted or healed: what the element was, and what is there now.
    detail: str = ""


class ReplayReport(BaseModel):
    """How a run used its recording: per step replayed / healed / drifted, and whether the live
    agent had to take over (``fell_back``, with the reason)."""

    model_config = ConfigDict(frozen=True)

    steps: list[StepReplay] = Field(default_factory=list)
    fell_back: bool = False
    reason: str = ""
    #: Model calls the replay spent (heals and fresh extracts), not counting a fallback run.
    model_calls: int = 0
    #: How the outcome differs from the recorded one, when every step ran: the end state (URL,
    #: title, main heading) and the output's values on the pages read. Empty: as recorded.
    outcome_differences: list[str] = Field(default_factory=list)

    @property
    def replayed(self) -> list[int]:
        return [s.index for s in self.steps if s.status == "replayed"]

    @property
    def healed(self) -> list[int]:
        return [s.index for s in self.steps if s.status == "healed"]

    @property
    def fresh(self) -> list[int]:
        return [s.index for s in self.steps if s.status == "fresh"]

    @property
    def drifted(self) -> list[int]:
        return [s.index for s in self.steps if s.status in ("drifted", "healed")]


def run_key(task: str, start_url: str, variables: list[str]) -> str:
    body = json.dumps([task.strip(), normalise_url(start_url), sorted(variables)], ensure_ascii=False)
    return hashlib.sha256(body.encode()).hexdigest()


class RunStore:
    """A folder of recordings, one JSON file per (task, start URL, variable names)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def path(self, task: str, start_url: str, variables: list[str]) -> Path:
        slug = re.sub(r"[^a-z0-9]+", "-", task.lower()).strip("-")[:48].strip("-") or "run"
        return self.directory / f"run-{slug}-{run_key(task, start_url, variables)[:16]}.json"

    def load(self, task: str, start_url: str, variables: list[str]) -> RunRecording | None:
        path = self.path(task, start_url, variables)
        if not path.exists():
            return None
        try:
            recording = load_recording(path)
        except CacheError as exc:
            logger.warning("%s; running the agent live", exc)
            return None
        if recording.key != run_key(task, start_url, variables):
            logger.warning("agent run %s belongs to another task or start URL; ignoring it", path.name)
            return None
        return recording

    def save(self, recording: RunRecording) -> Path:
        path = self.path(recording.task, recording.start_url, recording.variables)
        try:
            write_json_atomic(path, recording.model_dump(mode="json", by_alias=True))
        except OSError as exc:
            raise CacheError(f"cannot write the agent run {path}: {exc}. Check that cache_dir is writable.") from exc
        logger.info("agent run stored: %s (%d steps)", path.name, len(recording.steps))
        return path


def load_recording(path: str | os.PathLike[str]) -> RunRecording:
    """Read a stored run; a missing, unreadable or foreign file is a :class:`CacheError` saying which."""
    target = Path(path)
    try:
        data = json.loads(target.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CacheError(f"cannot read the agent run {target}: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CacheError(f"{target} is not a stored agent run (format {FORMAT!r} expected).")
    try:
        return RunRecording.model_validate(data)
    except ValidationError as exc:
        raise CacheError(f"the agent run {target} is malformed: {exc.error_count()} error(s), first: "
                         f"{exc.errors()[0]['msg']}") from exc


def recorded_data(run: Run, kind: Literal["extract", "save_progress"], data: Any, *, instruction: str = "",
                  schema: dict[str, Any] | None = None) -> RecordedStep:
    """A data step as recorded (redacted), with what of it the page the run was reading showed."""
    redacted = run.redact_data(data)
    unshown: list[str] = []
    apart: list[str] = []
    if run.snapshot is not None:  # the outline this step's model read
        unshown, apart = data_pins([view_of(run.snapshot, url="", title="", variables=run.variables)], redacted)
    return RecordedStep(kind=kind, instruction=run.redact(instruction), schema=schema, data=redacted,
                        unshown=unshown, apart=apart)


async def _end_view(run: Run) -> PageView | None:
    try:
        snapshot = await run.driver.snapshot()
        return view_of(snapshot, url=run.driver.page.url, title=await run.driver.page.title(), variables=run.variables)
    except (StagehandError, PlaywrightError) as exc:  # a closed or crashed page: the recording goes without it
        logger.warning("agent run: the end state could not be read (%s); the recording will not pin it", type(exc).__name__)
        return None


async def recording_of(run: Run, status: str, message: str, output: Any) -> RunRecording | None:
    """What ``run`` did, as a recording (redacted), with where it ended (one read of the page, no
    model); None when it cannot be replayed (said in the log)."""
    if run.unreplayable is not None or run.config.mode != "dom":
        logger.info("agent run not recorded for replay: %s", run.unreplayable or "computer-use mode")
        return None
    data = run.redact_data(output.model_dump(mode="json") if isinstance(output, BaseModel) else output)
    steps = [s.model_copy(update={"data": run.redact_data(s.data)}) if s.kind == "extract" else s for s in run.recorded]
    view = await _end_view(run)
    end = EndState(url=view.url, title=view.title, heading=view.heading) if view is not None else None
    unshown, apart = output_pins([(s.pinned, s.apart) for s in steps if s.kind in ("extract", "save_progress")], view, data)
    return RunRecording(task=run.redact(run.instruction), start_url=run.redact(run.start_url),
                        variables=run.variables.names, steps=steps, status=status, message=run.redact(message),
                        output=data, output_schema=run.output_schema, end=end, output_unshown=unshown,
                        output_apart=apart)


def report_of(run: Run) -> ReplayReport | None:
    """The run's replay report, with the steps the live agent took after a fallback listed as fresh."""
    report = run.replay_report
    if report is None or not report.fell_back:
        return report
    fresh = [StepReplay(index=len(report.steps) + n, kind=s.kind, status="fresh", summary=s.summary())
             for n, s in enumerate(run.recorded[run.replayed_steps:])]
    return report.model_copy(update={"steps": [*report.steps, *fresh]})
