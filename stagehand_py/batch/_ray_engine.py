"""The Ray engine of the batch runner: the same rows as :func:`run_batch`, on worker actors
across a Ray cluster. Imported only when ``--engine ray`` (or :func:`run_batch_on_ray`) is used.

Who does what:

- each **worker actor** keeps one browser (launched on its node, or a remote one) and runs up to
  ``contexts_per_worker`` rows at once, each in a fresh context, with :func:`work_on_row` -- the
  very function the local engine calls. It writes nothing: it hands the row's outcome back;
- one small **rate keeper actor** books per-host start slots for every worker, so the rate limit
  holds across the cluster;
- the **driver** (this process) schedules rows, keeps the run memory (notes go out with each row
  and are learned from each result as it comes back), and writes every row's evidence with
  :func:`record_row`. One writer means each row is written once; a worker that dies mid-row has
  written nothing, and its rows go to another worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import BrowserError, ConfigurationError
from .._logging import logger
from ._browser import BatchBrowser, endpoint_kind, open_batch_browser
from ._evidence import EvidenceStore
from ._factory import RunnerFactory
from ._memory import RunMemory
from ._runner import (
    BatchResult,
    DomainRateLimiter,
    RowOutcome,
    lost_row,
    mark_running,
    plan_run,
    record_cancelled,
    record_row,
    unwritten_row,
    work_on_row,
)
from ._spec import Sample, TaskSpec

__all__ = ["RayOptions", "RayStartError", "run_batch_on_ray", "check_address"]

_HOST_PORT = re.compile(r"^[A-Za-z0-9.-]+:\d{1,5}$")


def check_address(address: str | None) -> str | None:
    """``None`` (a one-node cluster started here), ``auto`` (the cluster this machine is part of),
    ``ray://host:port`` (Ray Client) or ``host:port`` (a head node's GCS); else a typed error."""
    if address is None or address == "auto":
        return address
    target = address.removeprefix("ray://")
    if _HOST_PORT.match(target) and 0 < int(target.rsplit(":", 1)[1]) < 65536:
        return address
    raise ConfigurationError(f"--address must be auto, ray://host:port or host:port, got {address!r}")


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ConfigurationError("--engine ray needs Ray: pip install 'stagehand_py[ray]'") from exc
    return ray


@dataclass
class RayOptions:
    """How the Ray engine runs.

    ``address``: see :func:`check_address`. ``workers`` actors each keep one browser and run up
    to ``contexts_per_worker`` rows at once; each reserves ``worker_cpus`` CPUs. A row whose worker
    dies is started again on another, up to ``max_attempts`` starts in one run; then it is
    recorded as failed. ``runtime_env`` is passed to ``ray.init`` (e.g. env vars or a
    ``working_dir`` the workers need).
    """

    address: str | None = None
    workers: int = 2
    contexts_per_worker: int = 2
    worker_cpus: float = 1.0
    browser_endpoint: str | None = None
    headless: bool = True
    max_attempts: int = 3
    runtime_env: dict[str, Any] | None = None
    num_cpus: int | None = None  # for a cluster started here; Ray's default is every core
    #: Tries at starting a one-node cluster here: each is bounded by Ray's own raylet start limit
    #: (30 s, fixed in Ray 2.60), which a loaded machine can miss.
    start_attempts: int = 3
    #: Seconds Ray waits for the GCS of a cluster started here (RAY_gcs_server_port_wait_time_s,
    #: unless set in the environment; Ray's default is 30).
    gcs_wait: int = 120

    def check(self) -> None:
        check_address(self.address)
        if self.browser_endpoint is not None:
            endpoint_kind(self.browser_endpoint)
        for name in ("workers", "contexts_per_worker", "max_attempts", "start_attempts", "gcs_wait"):
            if getattr(self, name) < 1:
                raise ConfigurationError(f"{name} must be at least 1, got {getattr(self, name)}")


class RayStartError(ConfigurationError):
    """The one-node Ray cluster this run starts did not come up (its raylet missed Ray's start
    limit every time: a machine too loaded to start it)."""


#: What Ray 2.60 raises (a bare Exception) when the raylet misses its start limit.
_RAYLET_TIMEOUT = "timed out during startup"


def _descendants(pid: int) -> list[int]:
    """Every living process below ``pid`` (Linux: from /proc; elsewhere none are known)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found.append(child)
        todo += children.get(child, [])
    return found


def _stop_processes(pids: list[int]) -> None:
    """Kill processes a failed start left (a raylet that never registered, its GCS, its agents)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


async def _init_ray(ray: Any, init: dict[str, Any], options: RayOptions) -> None:
    """``ray.init`` with typed errors. Starting a cluster here, a raylet that misses Ray's start
    limit (a loaded machine) gets ``options.start_attempts`` tries; what each failed try started is
    stopped before the next, and the last failure is a :class:`RayStartError` saying what to do."""
    where = options.address or "a new local one"
    attempts = options.start_attempts if options.address is None else 1
    gcs_wait_set = "RAY_gcs_server_port_wait_time_s" in os.environ
    if options.address is None and not gcs_wait_set:
        os.environ["RAY_gcs_server_port_wait_time_s"] = str(options.gcs_wait)
    try:
        for attempt in range(1, attempts + 1):
            before = set(_descendants(os.getpid()))
            try:
                await asyncio.to_thread(ray.init, **init)
                return
            except (ConnectionError, ValueError, RuntimeError) as exc:
                raise ConfigurationError(f"cannot join the Ray cluster at {where}: {exc}") from exc
            except Exception as exc:  # Ray's own bare Exception for a raylet that missed its start limit
                if _RAYLET_TIMEOUT not in str(exc):
                    raise ConfigurationError(f"cannot start or join the Ray cluster at {where}: {exc}") from exc
                _stop_processes([pid for pid in _descendants(os.getpid()) if pid not in before])
                with contextlib.suppress(Exception):
                    ray.shutdown()
                if attempt == attempts:
                    raise RayStartError(
                        f"the local Ray node did not start: its raylet missed Ray's 30 s start limit {attempts} "
                        "time(s) (the machine is too loaded). Try again when it is quieter, start a cluster yourself "
                        "(`ray start --head`) and pass --address auto, or run with --engine local."
                    ) from exc
                logger.warning("ray engine: the local Ray node did not start in time (try %d of %d); trying again",
                               attempt, attempts)
    finally:
        if options.address is None and not gcs_wait_set:
            os.environ.pop("RAY_gcs_server_port_wait_time_s", None)


class _RateKeeper:
    """The actor behind the cluster-wide rate limit: the local engine's limiter, asked by every
    worker (an async actor: waits on different hosts overlap, waits on one host queue)."""

    def __init__(self, interval: float) -> None:
        self._limiter = DomainRateLimiter(interval)

    async def wait(self, url: str) -> str | None:
        return await self._limiter.wait(url)


class _KeeperLimiter:
    """A worker's side of the cluster-wide rate limit: a row starts when the keeper lets it go."""

    def __init__(self, keeper: Any) -> None:
        self._keeper = keeper

    async def wait(self, url: str) -> str | None:
        turn: str | None = await self._keeper.wait.remote(url)
        return turn


class _BrowserWorker:
    """A worker actor: one browser, rows in fresh contexts of it (an async actor, so rows overlap)."""

    def __init__(self, factory: RunnerFactory, spec: dict[str, Any], endpoint: str | None, headless: bool, keeper: Any) -> None:
        self._factory = factory
        self._spec = TaskSpec.model_validate(spec)
        self._endpoint = endpoint
        self._headless = headless
        self._limiter = _KeeperLimiter(keeper)
        self._runner: Any = None
        self._browser: BatchBrowser | None = None

    async def start(self) -> int:
        self._runner = self._factory.build()
        self._browser = await open_batch_browser(self._endpoint, headless=self._headless)
        return os.getpid()

    async def run_row(self, sample: dict[str, Any], attempt: int, notes: list[str]) -> RowOutcome:
        assert self._browser is not None, "start() first"
        return await work_on_row(Sample.model_validate(sample), spec=self._spec, runner=self._runner,
                                 browser=self._browser.browser, limiter=self._limiter, attempt=attempt, memory_notes=notes)

    async def stop(self) -> None:
        if self._browser is not None:
            await self._browser.close()


@dataclass
class _Worker:
    handle: Any
    pid: int = 0
    busy: int = 0


@dataclass
class _Pool:
    """The worker actors of one run; a dead one is replaced by a fresh one."""

    ray: Any
    make: Callable[[], Any]
    workers: list[_Worker] = field(default_factory=list)

    async def add(self, count: int) -> None:
        handles = [self.make() for _ in range(count)]
        try:
            pids = await asyncio.gather(*(h.start.remote() for h in handles))
        except Exception as exc:  # Ray wraps the worker's error (a browser it could not open, a bad runner)
            for handle in handles:
                self.ray.kill(handle)
            raise BrowserError(f"the Ray workers could not start their browsers: {_cause(exc)}") from exc
        self.workers += [_Worker(handle=h, pid=pid) for h, pid in zip(handles, pids, strict=True)]

    def free(self, capacity: int) -> _Worker | None:
        idle = [w for w in self.workers if w.busy < capacity]
        return min(idle, key=lambda w: w.busy) if idle else None

    async def replace(self, dead: _Worker) -> None:
        if dead in self.workers:
            self.workers.remove(dead)
            self.ray.kill(dead.handle)  # make sure: a worker we gave up on takes no more rows
            await self.add(1)

    async def close(self) -> None:
        stops = [w.handle.stop.remote() for w in self.workers]
        try:
            await asyncio.wait_for(asyncio.gather(*stops, return_exceptions=True), timeout=30)
        except TimeoutError:
            logger.warning("ray engine: workers did not close their browsers within 30 s")
        for worker in self.workers:
            self.ray.kill(worker.handle)


def _cause(exc: BaseException) -> str:
    """The error a Ray task or actor raised, without Ray's wrapping (its traceback text)."""
    cause = getattr(exc, "cause", None)
    inner = cause if isinstance(cause, BaseException) else exc
    return f"{type(inner).__name__}: {inner}".splitlines()[0]


async def _outcome(ref: Any) -> RowOutcome:
    outcome: RowOutcome = await ref
    return outcome


async def run_batch_on_ray(
    samples: Sequence[Sample],
    *,
    spec: TaskSpec,
    runner: RunnerFactory,
    run_dir: Path | str | EvidenceStore,
    options: RayOptions | None = None,
    rate_limit: float = 0.0,
    resume: bool = False,
    on_status: Callable[[Sample, str], None] | None = None,
    memory: RunMemory | None = None,
) -> BatchResult:
    """Run every sample on Ray worker actors (skipping completed ones when ``resume``).

    Same rows, evidence and results as :func:`run_batch`; ``runner`` names the per-sample work
    so each worker can build its own. Joins the cluster at ``options.address`` (or starts a
    one-node cluster on 127.0.0.1 when the process is in none and no address is given).
    """
    options = options or RayOptions()
    options.check()
    ray = _import_ray()
    store = EvidenceStore.of(run_dir)
    notify = on_status or (lambda sample, status: None)
    planned = plan_run(samples, spec=spec, store=store, resume=resume, notify=notify, settings={
        "engine": "ray", "workers": options.workers, "contexts_per_worker": options.contexts_per_worker,
        "rate_limit": rate_limit, "memory": memory is not None,
    })
    if not planned.todo:
        return BatchResult(store=store, results=planned.results, skipped=planned.skipped)
    started_here = not ray.is_initialized()
    if started_here:
        init: dict[str, Any] = {"include_dashboard": False, "log_to_driver": True}
        if options.runtime_env:
            init["runtime_env"] = options.runtime_env
        if options.address is None:
            # A cluster of our own: on loopback only, sized as asked.
            init.update(_node_ip_address="127.0.0.1", num_cpus=options.num_cpus)
        else:
            init["address"] = options.address
        await _init_ray(ray, init, options)
    keeper = ray.remote(_RateKeeper).options(num_cpus=0).remote(rate_limit)
    worker_class = ray.remote(_BrowserWorker).options(num_cpus=options.worker_cpus, max_concurrency=options.contexts_per_worker)
    spec_json = spec.model_dump(mode="json")
    pool = _Pool(ray=ray, make=lambda: worker_class.remote(runner, spec_json, options.browser_endpoint, options.headless, keeper))
    results = planned.results
    try:
        await pool.add(options.workers)
        await _schedule(ray, pool, planned.todo, results, store=store, spec=spec, options=options, notify=notify, memory=memory)
    except asyncio.CancelledError:
        record_cancelled(store, planned.todo, results)
        raise
    finally:
        await pool.close()
        ray.kill(keeper)
        if started_here:
            ray.shutdown()
    return BatchResult(store=store, results=results, skipped=planned.skipped)


async def _schedule(
    ray: Any,
    pool: _Pool,
    todo: list[Sample],
    results: dict[str, dict[str, Any]],
    *,
    store: EvidenceStore,
    spec: TaskSpec,
    options: RayOptions,
    notify: Callable[[Sample, str], None],
    memory: RunMemory | None,
) -> None:
    pending = deque(todo)
    starts: dict[str, int] = {}
    running: dict[asyncio.Future[RowOutcome], tuple[Sample, _Worker, int, Any]] = {}
    try:
        while pending or running:
            while pending and (worker := pool.free(options.contexts_per_worker)) is not None:
                sample = pending.popleft()
                attempt = mark_running(store, sample)
                starts[sample.id] = starts.get(sample.id, 0) + 1
                notify(sample, "running")
                notes = memory.relevant(spec, sample) if memory is not None else []
                ref = worker.handle.run_row.remote(sample.model_dump(mode="json"), attempt, notes)
                running[asyncio.ensure_future(_outcome(ref))] = (sample, worker, attempt, ref)
                worker.busy += 1
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for future in done:
                sample, worker, attempt, _ref = running.pop(future)
                worker.busy -= 1
                try:
                    row = future.result()
                except ray.exceptions.RayActorError as exc:
                    # The worker died with this row in flight. It wrote nothing; run the row elsewhere.
                    logger.warning("ray engine: worker %s died running %s (%s)", worker.pid, sample.id, type(exc).__name__)
                    await pool.replace(worker)
                    if starts[sample.id] < options.max_attempts:
                        pending.appendleft(sample)
                        continue
                    row = lost_row(sample, attempt=attempt, error=f"the worker running this sample died {starts[sample.id]} times")
                except Exception as exc:  # the row's work failed outside what work_on_row catches: its error
                    logger.warning("ray engine: %s came back as an error: %r", sample.id, exc)
                    row = lost_row(sample, attempt=attempt, error=f"the worker could not run this sample: {type(exc).__name__}: {exc}")
                try:
                    results[sample.id] = await record_row(store, sample, row, spec=spec, memory=memory)
                except Exception as exc:  # its evidence could not be written: the row still has its outcome
                    logger.warning("ray engine: the evidence of %s could not be written: %r", sample.id, exc)
                    results[sample.id] = unwritten_row(sample, attempt=attempt, exc=exc).result
                notify(sample, results[sample.id]["status"])
    finally:
        for future, (*_, ref) in running.items():
            future.cancel()
            # The worker stops the row too (an async actor's task gets CancelledError), so it is free to
            # close its browser now instead of after the pool's 30 s wait for a row nobody awaits.
            ray.cancel(ref)
