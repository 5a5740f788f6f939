"""Batch throughput and memory: the local engine at 1/4/8 contexts and the Ray engine with 2
workers, on the same rows (local product pages, the scripted model of tests/batch).

    python benchmarks/batch_scale.py [--rows 100] [--configs local1,local4,local8,ray2x2]

Per configuration: rows per minute (wall time of the run: the local engine's browser is already
open, the Ray engine's time includes starting its workers and their browsers, not the cluster),
the peak memory of the whole process tree (this process, Playwright's driver, Chromium, and for
Ray its raylet, GCS and workers), the peak of the browser processes alone, and both divided by
the number of rows in flight at once -- the figure to compare. Memory is PSS (proportional set
size: a page shared by N processes counts 1/N in each), sampled every 0.5 s, so Chromium's
shared pages are not counted once per process. Needs psutil (the bench extra) and Ray (the ray extra).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "tests" / "batch")]
# A one-machine Ray cluster on loopback only (read when ray is imported).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

import psutil  # noqa: E402
from _browser import launch_chromium  # noqa: E402  (tests/_browser.py: the tests' Chromium flags)
from _scripted_runner import make_runner  # noqa: E402
from _server import StaticServer  # noqa: E402
from playwright.async_api import async_playwright  # noqa: E402

from stagehand_py.batch import RayOptions, RunnerFactory, Sample, TaskSpec, run_batch, run_batch_on_ray  # noqa: E402

SPEC = TaskSpec(goal="Record each product's name and price", required_fields=["name", "price"],
                required_screenshots=["product page"], max_time=120)
BROWSER_NAMES = ("chromium", "chrome", "headless_shell", "node")  # node: Playwright's driver


class PeakMemory:
    """Samples the PSS of this process's tree in a thread; keeps the peaks (all, browsers only)."""

    def __init__(self, interval: float = 0.5) -> None:
        self.interval = interval
        self.peak_total = 0
        self.peak_browser = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> tuple[int, int]:
        root = psutil.Process()
        total = browser = 0
        for proc in [root, *root.children(recursive=True)]:
            try:
                pss = proc.memory_full_info().pss
                name = proc.name().lower()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            total += pss
            if any(n in name for n in BROWSER_NAMES):
                browser += pss
        return total, browser

    def _run(self) -> None:
        while not self._stop.is_set():
            total, browser = self._sample()
            self.peak_total = max(self.peak_total, total)
            self.peak_browser = max(self.peak_browser, browser)
            self._stop.wait(self.interval)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class Row:
    config: str
    in_flight: int
    rows: int
    seconds: float
    done: int
    peak_total_mb: float
    peak_browser_mb: float

    @property
    def per_minute(self) -> float:
        return self.rows / self.seconds * 60


def samples(server: StaticServer, count: int) -> list[Sample]:
    return [Sample(id=f"row{i:03d}", url=server.url(f"products/{i % 6 + 1}.html?row={i}")) for i in range(count)]


async def bench_local(server: StaticServer, count: int, contexts: int, workdir: Path) -> Row:
    async with async_playwright() as pw:
        browser = await launch_chromium(pw)
        try:
            with PeakMemory() as memory:
                start = time.monotonic()
                result = await run_batch(samples(server, count), spec=SPEC, runner=make_runner(), browser=browser,
                                         run_dir=workdir / f"local{contexts}", concurrency=contexts)
                seconds = time.monotonic() - start
        finally:
            await browser.close()
    return Row(f"local, {contexts} context{'s' if contexts > 1 else ''}", contexts, count, seconds,
               result.counts["done"] + result.counts["needs_review"], memory.peak_total / 2**20, memory.peak_browser / 2**20)


async def bench_ray(server: StaticServer, count: int, workers: int, contexts: int, workdir: Path) -> Row:
    import ray

    ray.init(num_cpus=os.cpu_count(), include_dashboard=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([str(REPO / "tests" / "batch"), str(REPO)])}})
    try:
        with PeakMemory() as memory:
            start = time.monotonic()
            result = await run_batch_on_ray(samples(server, count), spec=SPEC, runner=RunnerFactory("_scripted_runner:make_runner"),
                                            run_dir=workdir / "ray", options=RayOptions(workers=workers, contexts_per_worker=contexts,
                                                                                          worker_cpus=0.5))
            seconds = time.monotonic() - start
    finally:
        ray.shutdown()
    return Row(f"ray, {workers} workers x {contexts} contexts", workers * contexts, count, seconds,
               result.counts["done"] + result.counts["needs_review"], memory.peak_total / 2**20, memory.peak_browser / 2**20)


def table(rows: list[Row]) -> str:
    lines = [
        "| engine | rows in flight | rows | s | rows/min | peak MB (all) | MB per row in flight | peak MB (browsers) | browser MB per row in flight |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.config} | {r.in_flight} | {r.done}/{r.rows} | {r.seconds:.1f} | {r.per_minute:.1f} | {r.peak_total_mb:.0f} | "
            f"{r.peak_total_mb / r.in_flight:.0f} | {r.peak_browser_mb:.0f} | {r.peak_browser_mb / r.in_flight:.0f} |"
        )
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--configs", default="local1,local4,local8,ray2x2")
    args = parser.parse_args()
    server = StaticServer().start()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack():
        for config in args.configs.split(","):
            if config.startswith("local"):
                row = await bench_local(server, args.rows, int(config.removeprefix("local")), Path(tmp))
            else:
                workers, contexts = (int(n) for n in config.removeprefix("ray").split("x"))
                row = await bench_ray(server, args.rows, workers, contexts, Path(tmp))
            rows.append(row)
            print(f"{row.config}: {row.per_minute:.1f} rows/min, peak {row.peak_total_mb:.0f} MB", file=sys.stderr, flush=True)
    server.stop()
    print(f"{args.rows} rows, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    print(table(rows))


if __name__ == "__main__":
    asyncio.run(main())
