"""The batch evidence runner: samples in isolated contexts, bounded concurrency, per-domain
rate limit, evidence written atomically, resumable.

The work done on one sample is a :class:`SampleRunner`: any async callable that takes a
:class:`SampleContext` and returns a :class:`SampleOutcome`. The default runs stagehand_py's
agent (see :mod:`stagehand_py.batch._agent_runner`); tests and special jobs pass their own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol, TypeAlias
from urllib.parse import urlsplit

from .._logging import logger
from ._evidence import SampleEvidence, atomic_write_json, safe_component
from ._memory import RunMemory
from ._spec import Sample, TaskSpec

__all__ = [
    "SampleStatus",
    "SampleContext",
    "SampleOutcome",
    "SampleRunner",
    "DomainRateLimiter",
    "BatchResult",
    "run_batch",
    "new_run_dir",
    "STATUSES",
]

SampleStatus: TypeAlias = Literal["done", "partial_success", "failed", "needs_review"]
STATUSES: tuple[SampleStatus, ...] = ("done", "partial_success", "failed", "needs_review")


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


class DomainRateLimiter:
    """At most one sample start per ``interval`` seconds on each host (0 switches it off)."""

    def __init__(self, interval: float) -> None:
        self.interval = max(0.0, float(interval))
        self._next: dict[str, float] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def wait(self, url: str) -> None:
        if self.interval <= 0:
            return
        host = (urlsplit(url).hostname or "").lower()
        lock = self._locks.setdefault(host, asyncio.Lock())
        async with lock:
            loop = asyncio.get_running_loop()
            delay = self._next.get(host, 0.0) - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            self._next[host] = loop.time() + self.interval


@dataclass
class BatchResult:
    run_dir: Path
    results: dict[str, dict[str, Any]]
    skipped: list[str]

    @property
    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = dict.fromkeys(STATUSES, 0)
        for result in self.results.values():
            counts[result["status"]] = counts.get(result["status"], 0) + 1
        return counts


def new_run_dir(evidence_dir: Path) -> Path:
    """``<evidence_dir>/run_<UTC timestamp>``, suffixed when two runs start in the same second."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path, n = evidence_dir / f"run_{stamp}", 2
    while path.exists():
        path, n = evidence_dir / f"run_{stamp}_{n}", n + 1
    path.mkdir(parents=True)
    return path


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


async def _run_one(
    sample: Sample,
    *,
    spec: TaskSpec,
    runner: SampleRunner,
    browser: Any,
    run_dir: Path,
    limiter: DomainRateLimiter,
    semaphore: asyncio.Semaphore,
    on_status: Callable[[Sample, str], None],
    memory: RunMemory | None = None,
) -> dict[str, Any]:
    folder = run_dir / safe_component(sample.id, fallback="sample")
    evidence = SampleEvidence(folder)
    previous = evidence.read_json("checkpoint.json") or {}
    attempt = int(previous.get("attempt", 0)) + 1
    async with semaphore:
        await limiter.wait(sample.url)
        started = time.monotonic()
        started_at = _now()
        checkpoint = {"sample_id": sample.id, "url": sample.url, "state": "running", "attempt": attempt, "started_at": started_at}
        evidence.write_json("checkpoint.json", checkpoint)
        on_status(sample, "running")
        ctx: SampleContext | None = None
        context = None
        try:
            context = await browser.new_context(viewport={"width": 1280, "height": 800})
            page = await context.new_page()
            ctx = SampleContext(page=page, sample=sample, spec=spec, evidence=evidence,
                                memory_notes=memory.relevant(spec, sample) if memory is not None else [])
            outcome = await asyncio.wait_for(runner(ctx), timeout=spec.max_time)
            if outcome.status not in STATUSES:
                raise ValueError(f"the sample runner returned status {outcome.status!r}, not one of {', '.join(STATUSES)}")
        except TimeoutError:
            outcome = SampleOutcome(status="failed", error=f"the sample took longer than max_time ({spec.max_time:g} s)")
        except Exception as exc:  # one sample's failure never stops the batch
            logger.warning("sample %s failed: %s: %s", sample.id, type(exc).__name__, exc)
            outcome = SampleOutcome(status="failed", error=f"{type(exc).__name__}: {exc}")
        finally:
            if context is not None:
                try:
                    await context.close()
                except Exception as exc:  # the browser may be gone: the outcome stands
                    logger.debug("closing the context of %s failed: %r", sample.id, exc)
        screenshots = list(evidence.screenshots)
        status, notes = judge(spec, outcome, screenshots)
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
            "hashes": {shot["file"]: shot["sha256"] for shot in screenshots},
            "usage": outcome.usage,
            "started_at": started_at,
            "finished_at": _now(),
            "duration_s": round(time.monotonic() - started, 3),
            "attempt": attempt,
            **({"extra": outcome.extra} if outcome.extra else {}),
        }
        evidence.write_json("action_log.json", ctx.action_log if ctx is not None else [])
        evidence.write_json("result.json", result)
        if memory is not None:
            try:
                await memory.learn(spec, sample, result, ctx.action_log if ctx is not None else [])
            except (OSError, ValueError) as exc:  # memory is a help; the sample's result stands
                logger.warning("run memory: could not learn from %s: %s", sample.id, exc)
        # Written last: a sample counts as complete only once its result is on disk.
        evidence.write_json("checkpoint.json", {**checkpoint, "state": "complete", "status": status, "finished_at": result["finished_at"]})
        on_status(sample, status)
        return result


def completed_result(run_dir: Path, sample: Sample) -> dict[str, Any] | None:
    """The stored result of a sample whose checkpoint says complete, else None."""
    evidence = SampleEvidence(run_dir / safe_component(sample.id, fallback="sample"))
    checkpoint = evidence.read_json("checkpoint.json")
    if not isinstance(checkpoint, dict) or checkpoint.get("state") != "complete":
        return None
    result = evidence.read_json("result.json")
    return result if isinstance(result, dict) and result.get("status") in STATUSES else None


async def run_batch(
    samples: Sequence[Sample],
    *,
    spec: TaskSpec,
    runner: SampleRunner,
    browser: Any,
    run_dir: Path,
    concurrency: int = 2,
    rate_limit: float = 0.0,
    resume: bool = False,
    on_status: Callable[[Sample, str], None] | None = None,
    memory: RunMemory | None = None,
) -> BatchResult:
    """Run every sample (skipping completed ones when ``resume``) and return their results.

    ``browser`` is a Playwright async ``Browser``; each sample gets its own context in it.
    ``rate_limit`` is the minimum number of seconds between two sample starts on one host.
    Writes ``run.json``; the caller writes the combined report (see ``write_reports``).
    ``memory`` (a :class:`RunMemory` of this run folder) turns run-scoped memory on: each
    sample gets the notes of the samples finished before it, and adds its own.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    ids = [s.id for s in samples]
    if len(set(ids)) != len(ids):
        raise ValueError("sample ids must be unique")
    run_dir.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240  (once, before any row starts)
    notify = on_status or (lambda sample, status: None)
    results: dict[str, dict[str, Any]] = {}
    skipped: list[str] = []
    todo: list[Sample] = []
    for sample in samples:
        done = completed_result(run_dir, sample) if resume else None
        if done is not None:
            results[sample.id] = done
            skipped.append(sample.id)
            notify(sample, done["status"])
        else:
            todo.append(sample)
    atomic_write_json(run_dir / "run.json", {
        "spec": spec.model_dump(mode="json"),
        "samples": [s.model_dump(mode="json") for s in samples],
        "concurrency": concurrency,
        "rate_limit": rate_limit,
        "memory": memory is not None,
        "updated_at": _now(),
    })
    limiter = DomainRateLimiter(rate_limit)
    semaphore = asyncio.Semaphore(concurrency)
    tasks = [
        asyncio.create_task(_run_one(s, spec=spec, runner=runner, browser=browser, run_dir=run_dir,
                                     limiter=limiter, semaphore=semaphore, on_status=notify, memory=memory),
                            name=f"sample {s.id}")
        for s in todo
    ]
    try:
        for sample, outcome in zip(todo, await asyncio.gather(*tasks), strict=True):
            results[sample.id] = outcome
    finally:
        for task in tasks:
            task.cancel()
    return BatchResult(run_dir=run_dir, results=results, skipped=skipped)
