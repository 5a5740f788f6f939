"""The batch evidence runner: samples in isolated contexts, bounded concurrency, per-domain
rate limit, evidence written atomically, resumable.

The work done on one sample is a :class:`SampleRunner`: any async callable that takes a
:class:`SampleContext` and returns a :class:`SampleOutcome`. The default runs stagehand_py's
agent (see :mod:`stagehand_py.batch._agent_runner`); tests and special jobs pass their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol, TypeAlias
from urllib.parse import urlsplit

from .._logging import logger
from .._viewer import RunRecorder, render_run_html, watching
from ..browser._guard import GuardLease, hold_guard
from ..browser._recording import TraceRecording, start_trace
from ._evidence import EvidenceStore, SampleEvidence, safe_component
from ._memory import RunMemory
from ._spec import Sample, TaskSpec

__all__ = [
    "SampleStatus",
    "SampleContext",
    "SampleOutcome",
    "SampleRunner",
    "DomainRateLimiter",
    "RateLimiter",
    "BatchResult",
    "RowOutcome",
    "PlannedRun",
    "plan_run",
    "work_on_row",
    "lost_row",
    "unwritten_row",
    "mark_running",
    "record_row",
    "completed_result",
    "run_batch",
    "new_run_dir",
    "STATUSES",
    "CANCELLED",
    "record_cancelled",
    "recorded_results",
]

SampleStatus: TypeAlias = Literal["done", "unverified", "partial_success", "failed", "needs_review"]
STATUSES: tuple[SampleStatus, ...] = ("done", "unverified", "partial_success", "failed", "needs_review")
#: The status recorded for a row the user's interrupt (Ctrl-C) stopped or kept from starting;
#: never a runner's answer, and never complete: ``--resume`` runs the row again.
CANCELLED = "cancelled"


@dataclass
class SampleContext:
    """What a :class:`SampleRunner` gets for one sample.

    ``page`` is a fresh page in a browser context of its own. Save screenshots through
    :meth:`screenshot` (or ``evidence.add_screenshot``) so they are numbered and hashed as
    they are written; append what was done to ``action_log``. ``memory_notes`` are the run
    memory's notes for this sample (empty unless the run has memory on), best first.
    """

    page: Any
    sample: Sample
    spec: TaskSpec
    evidence: SampleEvidence
    action_log: list[dict[str, Any]] = field(default_factory=list)
    memory_notes: list[str] = field(default_factory=list)

    async def screenshot(self, name: str = "page", *, step: int | None = None, full_page: bool = True) -> dict[str, Any]:
        data = await self.page.screenshot(full_page=full_page)
        return self.evidence.add_screenshot(data, name=name, step=step)


@dataclass
class SampleOutcome:
    """What a runner found: status, data, and optionally usage and an error message."""

    status: SampleStatus
    data: Any = None
    error: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


class SampleRunner(Protocol):
    def __call__(self, ctx: SampleContext, /) -> Awaitable[SampleOutcome]: ...


class RateLimiter(Protocol):
    """Waits until a sample may start on ``url`` (in this process, or by asking a shared keeper).

    Returns when the host's turn was given, by the clock of whoever keeps the limit (UTC, ISO
    8601), or ``None`` when there is no limit: the row records it as ``host_turn_at``."""

    async def wait(self, url: str) -> str | None: ...


class DomainRateLimiter:
    """At most one sample start per ``interval`` seconds on each host (0 switches it off).

    The next start on a host is counted from when the previous one was let go, not from when it
    was booked, so a late wake-up never squeezes two starts together. The Ray engine runs one of
    these in a small actor that every worker asks, which makes the limit cluster-wide.
    """

    def __init__(self, interval: float) -> None:
        self.interval = max(0.0, float(interval))
        self._next: dict[str, float] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def wait(self, url: str) -> str | None:
        if self.interval <= 0:
            return None
        host = (urlsplit(url).hostname or "").lower()
        lock = self._locks.setdefault(host, asyncio.Lock())
        async with lock:
            loop = asyncio.get_running_loop()
            delay = self._next.get(host, 0.0) - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            self._next[host] = loop.time() + self.interval
            return _now()


@dataclass
class BatchResult:
    store: EvidenceStore
    results: dict[str, dict[str, Any]]
    skipped: list[str]

    @property
    def run_dir(self) -> Path | str:
        """The run folder: a ``Path`` on this machine, else its URL."""
        return self.store.local if self.store.local is not None else self.store.location

    @property
    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = dict.fromkeys(STATUSES, 0)
        for result in self.results.values():
            counts[result["status"]] = counts.get(result["status"], 0) + 1
        return counts


def new_run_dir(evidence_dir: Path | str | EvidenceStore) -> EvidenceStore:
    """``<evidence_dir>/run_<UTC timestamp>``, suffixed when two runs start in the same second."""
    parent = EvidenceStore.of(evidence_dir)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    taken = set(parent.runs())
    name, n = f"run_{stamp}", 2
    while name in taken or (parent.local is not None and (parent.local / name).exists()):
        name, n = f"run_{stamp}_{n}", n + 1
    run = parent.child(name)
    if run.local is not None:
        run.local.mkdir(parents=True)
    return run


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _missing_fields(data: Any, required: Sequence[str]) -> list[str]:
    def present(item: Any, name: str) -> bool:
        return isinstance(item, dict) and item.get(name) not in (None, "", [], {})

    if not required:
        return []
    if isinstance(data, list):  # a list of items: every item needs every field
        return sorted({name for item in data for name in required if not present(item, name)}) if data else list(required)
    return [name for name in required if not present(data, name)]


def _item_count(data: Any) -> int | None:
    if isinstance(data, list):
        return len(data)
    if isinstance(data, dict):
        lists = [v for v in data.values() if isinstance(v, list)]
        if len(lists) == 1:
            return len(lists[0])
    return None


def judge(spec: TaskSpec, outcome: SampleOutcome, screenshots: list[dict[str, Any]]) -> tuple[SampleStatus, list[str]]:
    """The sample's final status: a ``done`` the spec's requirements do not back is downgraded.

    Missing required fields or fewer than ``expected_items`` -> ``partial_success``; a
    missing required screenshot -> ``needs_review``. Other statuses stand as reported.
    """
    status = outcome.status
    notes: list[str] = []
    if status != "done":
        return status, notes
    missing = _missing_fields(outcome.data, spec.required_fields)
    if missing:
        notes.append(f"required fields missing or empty: {', '.join(missing)}")
    count = _item_count(outcome.data)
    if spec.expected_items is not None and count is not None and count < spec.expected_items:
        notes.append(f"{count} items, {spec.expected_items} expected")
    names = {shot["name"] for shot in screenshots}
    absent = [name for name in spec.required_screenshots if name not in names]
    if absent:
        notes.append(f"required screenshots missing: {', '.join(absent)}")
        return "needs_review", notes
    return ("partial_success" if notes else "done"), notes


@dataclass
class RowOutcome:
    """What the work on one row produced, before anything of it is written: plain data, so a
    worker on another machine can hand it back to the driver."""

    sample_id: str
    folder: str
    result: dict[str, Any]
    action_log: list[dict[str, Any]]
    files: dict[str, bytes]


def sample_folder(sample: Sample) -> str:
    return safe_component(sample.id, fallback="sample")


async def work_on_row(
    sample: Sample,
    *,
    spec: TaskSpec,
    runner: SampleRunner,
    browser: Any,
    limiter: RateLimiter,
    attempt: int = 1,
    memory_notes: Sequence[str] = (),
) -> RowOutcome:
    """One row's work, the same on every engine: open a fresh isolated context of ``browser``,
    wait for the host's turn, run ``runner`` in it within the spec's ``max_time``, judge the outcome.
    Writes nothing: the caller records the returned outcome (:func:`record_row`)."""
    evidence = SampleEvidence(sample_folder(sample))
    recorder = RunRecorder(title=f"{spec.goal[:80]} — row {sample.id}")
    watched = contextlib.ExitStack()
    trace: TraceRecording | None = None
    started = time.monotonic()
    started_at = _now()
    ctx: SampleContext | None = None
    context = None
    guard: GuardLease | None = None
    blocked: list[dict[str, Any]] = []
    outcome: SampleOutcome | None = None
    host_turn_at: str | None = None
    try:
        if sample.input_error is not None:  # a bad row of the samples file: recorded, never run
            raise _RowError(sample.input_error)
        context = await browser.new_context(viewport={"width": 1280, "height": 800})
        # What the row's runner does is recorded for its run.html (and its trace.zip), whatever it is.
        watched.enter_context(watching(context, recorder))
        trace = await start_trace(context, title=f"row {sample.id}") if spec.trace != "off" else None
        page = await context.new_page()
        # The spec's allowed_domains hold the row's context before its runner runs: every runner,
        # every tab it opens, its own navigations too.
        guard = await hold_guard(page, spec.allowed_domains)
        ctx = SampleContext(page=page, sample=sample, spec=spec, evidence=evidence, memory_notes=list(memory_notes))
        # The host's turn is taken last, right before the runner's first request: opening the
        # context takes a varying time, which would otherwise eat into the spacing.
        host_turn_at = await limiter.wait(sample.url)
        # The runner's own task: a runner cancelling "its" task cancels this one, never the row's.
        outcome = await asyncio.wait_for(asyncio.ensure_future(_contained(runner(ctx))), timeout=spec.max_time)
        if not isinstance(outcome, SampleOutcome):
            raise TypeError(f"the sample runner returned {type(outcome).__name__}, not a SampleOutcome")
        if outcome.status not in STATUSES:
            raise ValueError(f"the sample runner returned status {outcome.status!r}, not one of {', '.join(STATUSES)}")
    except TimeoutError:
        outcome = SampleOutcome(status="failed", error=f"the sample took longer than max_time ({spec.max_time:g} s)")
    except _RowError as exc:
        outcome = SampleOutcome(status="failed", error=str(exc))
    except BaseException as exc:  # one sample's failure never stops the batch; the user's interrupt does
        if isinstance(exc, KeyboardInterrupt) or _cancelled_from_outside():
            raise
        logger.warning("sample %s failed: %s", sample.id, _describe(exc))
        outcome = SampleOutcome(status="failed", error=_describe(exc))
    finally:
        if guard is not None:
            blocked = [b.model_dump(mode="json") for b in guard.blocked]
            try:
                await guard.release()
            except Exception as exc:  # the context goes next: what the guard held goes with it
                logger.debug("removing the guard of %s failed: %r", sample.id, exc)
        watched.close()
        if outcome is not None:  # not interrupted: the row's run.html and trace, while its context is open
            await _keep_viewer_files(evidence, recorder, trace, spec=spec, outcome=outcome)
        if context is not None:
            try:
                await context.close()
            except Exception as exc:  # the browser may be gone: the outcome stands
                logger.debug("closing the context of %s failed: %r", sample.id, exc)
    assert outcome is not None  # every way out of the try above that gets here set it
    screenshots = list(evidence.screenshots)
    status, notes = judge(spec, outcome, screenshots)
    notes += [f"download not saved: {failure.get('suggested_filename')!r} ({failure.get('error')})"
              for failure in outcome.extra.get("download_failures", []) if isinstance(failure, dict)]
    result = {
        "sample_id": sample.id,
        "url": sample.url,
        "input": sample.data,
        "status": status,
        "reported_status": outcome.status,
        "data": outcome.data,
        "error": outcome.error,
        "notes": notes,
        "screenshots": screenshots,
        # Every file kept for the row (screenshots, downloads), hashed from the bytes to be written.
        "hashes": {name: hashlib.sha256(data).hexdigest() for name, data in evidence.files.items()},
        "usage": outcome.usage,
        "started_at": started_at,
        "finished_at": _now(),
        "duration_s": round(time.monotonic() - started, 3),
        "attempt": attempt,
        # When the rate limit let the row go (its keeper's clock): what a site owner's logs can be held against.
        **({"host_turn_at": host_turn_at} if host_turn_at is not None else {}),
        **({"blocked": blocked} if spec.allowed_domains is not None else {}),
        **({"extra": outcome.extra} if outcome.extra else {}),
    }
    return RowOutcome(sample_id=sample.id, folder=evidence.folder, result=result,
                      action_log=ctx.action_log if ctx is not None else [], files=dict(evidence.files))


async def _keep_viewer_files(evidence: SampleEvidence, recorder: RunRecorder, trace: TraceRecording | None, *,
                             spec: TaskSpec, outcome: SampleOutcome) -> None:
    """The row's ``run.html`` (and its ``trace.zip`` when kept), before its context closes."""
    status, _ = judge(spec, outcome, evidence.screenshots)
    keep_trace = spec.trace == "on" or status != "done"
    recorder.meta.update({"status": status, "message": recorder.variables.redact(outcome.error or ""), "kind": "batch row"})
    try:
        evidence.keep("run.html", render_run_html(recorder).encode("utf-8"))
        if trace is not None:
            with tempfile.TemporaryDirectory(prefix="stagehand-row-trace-") as scratch:
                written = await trace.stop(Path(scratch) / "trace.zip" if keep_trace else None)
                if written is not None:
                    evidence.keep("trace.zip", written.read_bytes())
    except Exception as exc:  # the row's outcome stands without its viewer files
        logger.warning("the run viewer files of row %s were not kept: %r", evidence.folder, exc)


class _RowError(Exception):
    """A row's error whose message is the whole story (a bad row of the samples file, naming the
    file and line; a ``SystemExit`` the row's work raised)."""


async def _contained(work: Awaitable[SampleOutcome]) -> SampleOutcome:
    """The runner's work, with a ``SystemExit`` kept as the row's: asyncio lets that one out of a
    task into the event loop, which would end the whole batch."""
    try:
        return await work
    except SystemExit as exc:
        raise _RowError(_describe(exc)) from exc


def _cancelled_from_outside() -> bool:
    """True when this task is being cancelled (the user's interrupt, the run stopping), as opposed
    to a ``CancelledError`` that the row's own work raised, which is that row's error."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else f"{type(exc).__name__} (raised by the sample's work)"


def lost_row(sample: Sample, *, attempt: int, error: str) -> RowOutcome:
    """The outcome of a row whose work never came back (its worker died each time it ran)."""
    now = _now()
    result: dict[str, Any] = {
        "sample_id": sample.id, "url": sample.url, "input": sample.data, "status": "failed", "reported_status": "failed",
        "data": None, "error": error, "notes": [], "screenshots": [], "hashes": {}, "usage": {},
        "started_at": now, "finished_at": now, "duration_s": 0.0, "attempt": attempt,
    }
    return RowOutcome(sample_id=sample.id, folder=sample_folder(sample), result=result, action_log=[], files={})


def unwritten_row(sample: Sample, *, attempt: int, exc: Exception) -> RowOutcome:
    """The outcome of a row whose evidence could not be written (a full disk, a store refusing)."""
    return lost_row(sample, attempt=attempt, error=f"its evidence could not be written: {type(exc).__name__}: {exc}")


def mark_running(store: EvidenceStore, sample: Sample) -> int:
    """Checkpoint the row as running (its attempt number counts every start, across engines and
    resumes) and return that attempt number."""
    folder = sample_folder(sample)
    previous = store.read_json(f"{folder}/checkpoint.json") or {}
    attempt = int(previous.get("attempt", 0)) + 1
    store.write_json(f"{folder}/checkpoint.json", {"sample_id": sample.id, "url": sample.url, "state": "running",
                                                   "attempt": attempt, "started_at": _now()})
    return attempt


async def record_row(
    store: EvidenceStore, sample: Sample, row: RowOutcome, *, spec: TaskSpec, memory: RunMemory | None = None
) -> dict[str, Any]:
    """Write one row's evidence, once: screenshots, ``action_log.json``, ``result.json``, then the
    ``complete`` checkpoint. A row already complete (a result delivered twice) is left as it is and
    its stored result returned. Only the driver calls this, so one process writes each row."""
    stored = completed_result(store, sample)
    if stored is not None:
        logger.warning("sample %s was already recorded; keeping the first result", sample.id)
        return stored
    folder = row.folder
    for name, data in row.files.items():
        store.write_bytes(f"{folder}/{name}", data)
    store.write_json(f"{folder}/action_log.json", row.action_log)
    store.write_json(f"{folder}/result.json", row.result)
    if memory is not None:
        try:
            await memory.learn(spec, sample, row.result, row.action_log)
        except (OSError, ValueError) as exc:  # memory is a help; the sample's result stands
            logger.warning("run memory: could not learn from %s: %s", sample.id, exc)
    # Written last: a sample counts as complete only once its result is stored.
    checkpoint = store.read_json(f"{folder}/checkpoint.json") or {}
    store.write_json(f"{folder}/checkpoint.json", {
        **checkpoint, "sample_id": sample.id, "url": sample.url, "state": "complete", "status": row.result["status"],
        "attempt": row.result["attempt"], "finished_at": row.result["finished_at"],
    })
    return row.result


def record_cancelled(store: EvidenceStore, samples: Sequence[Sample], results: dict[str, dict[str, Any]]) -> None:
    """Record every row of ``samples`` that has no result yet as cancelled by the user: its
    ``result.json`` says so, its checkpoint says ``cancelled`` (not complete, so ``--resume`` runs
    it again) and keeps its attempt count. Rows already recorded are left as they are."""
    for sample in samples:
        if sample.id in results:
            continue
        stored = completed_result(store, sample)
        if stored is not None:
            results[sample.id] = stored
            continue
        folder = sample_folder(sample)
        checkpoint = store.read_json(f"{folder}/checkpoint.json") or {}
        attempt = int(checkpoint.get("attempt", 0))
        row = lost_row(sample, attempt=attempt, error="cancelled by the user (interrupted) before it finished; "
                       "--resume runs it again")
        result = {**row.result, "status": CANCELLED, "reported_status": CANCELLED}
        store.write_json(f"{folder}/result.json", result)
        store.write_json(f"{folder}/checkpoint.json", {"sample_id": sample.id, "url": sample.url, "state": CANCELLED,
                                                       "attempt": attempt, "finished_at": result["finished_at"]})
        results[sample.id] = result


def recorded_results(store: EvidenceStore, samples: Sequence[Sample]) -> dict[str, dict[str, Any]]:
    """Every row's recorded result (complete or cancelled) from the run folder, by sample id."""
    results: dict[str, dict[str, Any]] = {}
    for sample in samples:
        result = store.read_json(f"{sample_folder(sample)}/result.json")
        if isinstance(result, dict) and result.get("status") in (*STATUSES, CANCELLED):
            results[sample.id] = result
    return results


def completed_result(run_dir: Path | str | EvidenceStore, sample: Sample) -> dict[str, Any] | None:
    """The stored result of a sample whose checkpoint says complete, else None."""
    store = EvidenceStore.of(run_dir)
    folder = sample_folder(sample)
    checkpoint = store.read_json(f"{folder}/checkpoint.json")
    if not isinstance(checkpoint, dict) or checkpoint.get("state") != "complete":
        return None
    result = store.read_json(f"{folder}/result.json")
    return result if isinstance(result, dict) and result.get("status") in STATUSES else None


@dataclass
class PlannedRun:
    """A run ready to schedule: the rows already complete (on resume) and the rows to do."""

    store: EvidenceStore
    results: dict[str, dict[str, Any]]
    skipped: list[str]
    todo: list[Sample]


def plan_run(
    samples: Sequence[Sample],
    *,
    spec: TaskSpec,
    store: EvidenceStore,
    resume: bool,
    notify: Callable[[Sample, str], None],
    settings: dict[str, Any],
) -> PlannedRun:
    """What every engine does before scheduling: check the ids, pick up completed rows when
    resuming (whichever engine completed them), and write ``run.json``."""
    ids = [s.id for s in samples]
    if len(set(ids)) != len(ids):
        raise ValueError("sample ids must be unique")
    folders = [sample_folder(s) for s in samples]
    if len(set(folders)) != len(folders):
        raise ValueError("sample ids must stay unique once reduced to folder names (A-Z a-z 0-9 . _ -)")
    if store.local is not None:
        store.local.mkdir(parents=True, exist_ok=True)
    planned = PlannedRun(store=store, results={}, skipped=[], todo=[])
    for sample in samples:
        done = completed_result(store, sample) if resume else None
        if done is not None:
            planned.results[sample.id] = done
            planned.skipped.append(sample.id)
            notify(sample, done["status"])
        else:
            planned.todo.append(sample)
    store.write_json("run.json", {
        "spec": spec.model_dump(mode="json"),
        "samples": [s.model_dump(mode="json") for s in samples],
        **settings,
        "updated_at": _now(),
    })
    return planned


async def run_batch(
    samples: Sequence[Sample],
    *,
    spec: TaskSpec,
    runner: SampleRunner,
    browser: Any,
    run_dir: Path | str | EvidenceStore,
    concurrency: int = 2,
    rate_limit: float = 0.0,
    resume: bool = False,
    on_status: Callable[[Sample, str], None] | None = None,
    memory: RunMemory | None = None,
) -> BatchResult:
    """Run every sample in this process (skipping completed ones when ``resume``) and return their results.

    ``browser`` is a Playwright async ``Browser``; each sample gets its own context in it.
    ``run_dir`` is a folder or any fsspec URL. ``rate_limit`` is the minimum number of seconds
    between two sample starts on one host. Writes ``run.json``; the caller writes the combined
    report (see ``write_reports``). ``memory`` (a :class:`RunMemory` of this run folder) turns
    run-scoped memory on: each sample gets the notes of the samples finished before it, and adds
    its own. :func:`stagehand_py.batch.run_batch_on_ray` schedules the same work on a Ray cluster.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    store = EvidenceStore.of(run_dir)
    notify = on_status or (lambda sample, status: None)
    planned = plan_run(samples, spec=spec, store=store, resume=resume, notify=notify, settings={
        "engine": "local", "concurrency": concurrency, "rate_limit": rate_limit, "memory": memory is not None,
    })
    limiter = DomainRateLimiter(rate_limit)
    semaphore = asyncio.Semaphore(concurrency)

    async def one(sample: Sample) -> None:
        async with semaphore:
            attempt = 0
            try:
                attempt = mark_running(store, sample)
                notify(sample, "running")
                notes = memory.relevant(spec, sample) if memory is not None else []
                row = await work_on_row(sample, spec=spec, runner=runner, browser=browser, limiter=limiter,
                                        attempt=attempt, memory_notes=notes)
                planned.results[sample.id] = await record_row(store, sample, row, spec=spec, memory=memory)
            except Exception as exc:  # its evidence could not be written: the row still has its outcome
                logger.warning("sample %s: its evidence could not be written: %r", sample.id, exc)
                planned.results[sample.id] = unwritten_row(sample, attempt=attempt, exc=exc).result
            notify(sample, planned.results[sample.id]["status"])

    tasks = [asyncio.create_task(one(s), name=f"sample {s.id}") for s in planned.todo]
    try:
        # gather returns once every row is recorded; cancelled, it first cancels the rows in flight
        # and waits for them to close their contexts.
        await asyncio.gather(*tasks)
    except asyncio.CancelledError:
        record_cancelled(store, planned.todo, planned.results)
        raise
    finally:
        for task in tasks:
            task.cancel()
    return BatchResult(store=store, results=planned.results, skipped=planned.skipped)
