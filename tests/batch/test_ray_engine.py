"""The Ray engine on a real one-node Ray cluster (2 CPUs, loopback only), real Chromium in each
worker, the local product pages; only the model is scripted (tests/batch/_scripted_runner.py).

Ray starts once for this module (~10-20 s on 2 cores); each run starts two worker actors.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import csv
import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from stagehand_py import BrowserError, ConfigurationError
from stagehand_py.batch import RayOptions, RunnerFactory, Sample, TaskSpec, run_batch, run_batch_on_ray, write_reports

from ._scripted_runner import make_runner

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RUNNER = RunnerFactory("_scripted_runner:make_runner")
SPEC = TaskSpec(goal="Record each product's name and price", required_fields=["name", "price"],
                required_screenshots=["product page"], max_time=60)
KILLED_ROW = "r07"


@pytest.fixture(scope="module")
def ray_starting(tmp_path_factory: pytest.TempPathFactory):
    """``ray.init`` started in a thread (as the engine itself runs it), so the local baseline runs
    while Ray starts; :func:`ray_cluster` waits for it."""
    pids = tmp_path_factory.mktemp("ray") / "pids.log"
    with pytest.MonkeyPatch.context() as env, concurrent.futures.ThreadPoolExecutor(1) as thread:
        # Ray's own switch for a one-machine cluster: node address and every server on 127.0.0.1.
        # Read when ray is first imported, so it is set before.
        env.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        import ray

        started = thread.submit(ray.init, num_cpus=2, include_dashboard=False, runtime_env={"env_vars": {
            "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT)]),
            "SCRIPTED_RUNNER_PIDS": str(pids), "SCRIPTED_RUNNER_HANG_ONCE": KILLED_ROW,
        }})
        try:
            yield pids, started
        finally:
            concurrent.futures.wait([started])
            ray.shutdown()


@pytest.fixture(scope="module")
def ray_cluster(ray_starting: tuple[Path, concurrent.futures.Future[object]]) -> Path:
    import ray

    pids, started = ray_starting
    started.result()
    assert ray.util.get_node_ip_address() == "127.0.0.1"
    return pids


def twenty_rows(server) -> list[Sample]:
    return [Sample(id=f"r{i:02d}", url=server.url(f"products/{i % 6 + 1}.html?row={i}"), data={"n": str(i)}) for i in range(20)]


def combined(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "combined.csv").open() as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
async def local_baseline(ray_starting, server, browser, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 20 rows on the local engine: what the Ray engine must reproduce (run while Ray starts)."""
    run_dir = tmp_path_factory.mktemp("local") / "run_local"
    result = await run_batch(twenty_rows(server), spec=SPEC, runner=make_runner(), browser=browser, run_dir=run_dir, concurrency=4)
    write_reports(run_dir, result.results)
    return run_dir


async def kill_when_started(pids: Path, sample_id: str, timeout: float = 120) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = pids.read_text().split("\n") if pids.exists() else []
        for line in lines:
            if line.startswith(f"{sample_id} "):
                pid = int(line.split()[1])
                os.kill(pid, signal.SIGKILL)
                return pid
        await asyncio.sleep(0.1)
    raise AssertionError(f"{sample_id} never started")


@contextlib.contextmanager
def product_hits(server):
    """Times of every product page request the server answers (the pages stay as they are)."""
    hits: list[float] = []

    def serve(request):
        hits.append(time.monotonic())
        return server.serve_file(request.path)

    with contextlib.ExitStack() as stack:
        for n in range(1, 7):
            stack.enter_context(server.route(f"/products/{n}.html", serve))
        yield hits


async def test_twenty_rows_match_the_local_engine_and_a_killed_worker_loses_nothing(
    local_baseline: Path, ray_cluster: Path, server, browser, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run_ray"
    seen: list[tuple[str, str]] = []
    killer = asyncio.create_task(kill_when_started(ray_cluster, KILLED_ROW))
    with product_hits(server) as hits:
        result = await run_batch_on_ray(twenty_rows(server), spec=SPEC, runner=RUNNER, run_dir=run_dir,
                                        options=RayOptions(workers=2, contexts_per_worker=2),
                                        on_status=lambda s, st: seen.append((s.id, st)))
    killed_pid = await killer
    write_reports(run_dir, result.results)

    # The same combined results as the local engine, each row once (timing fields are not in the CSV).
    assert (run_dir / "combined.csv").read_text() == (local_baseline / "combined.csv").read_text()
    assert [r["sample_id"] for r in combined(run_dir)] == [f"r{i:02d}" for i in range(20)]
    assert sum(result.counts.values()) == 20

    # The killed worker's row ran again in another process and was written once, as attempt 2.
    starts = [line.split() for line in ray_cluster.read_text().splitlines()]
    again = [int(pid) for sid, pid in starts if sid == KILLED_ROW]
    assert len(again) == 2 and again[0] == killed_pid and again[1] != killed_pid
    stored = json.loads((run_dir / KILLED_ROW / "result.json").read_text())
    assert stored["attempt"] == 2 and stored["status"] == "done"
    assert json.loads((run_dir / KILLED_ROW / "checkpoint.json").read_text())["state"] == "complete"
    finished = [sid for sid, st in seen if st != "running"]
    assert sorted(finished) == [f"r{i:02d}" for i in range(20)]  # each row finished once
    # Every row's evidence matches its local twin's: same files, same data.
    for i in range(20):
        folder = f"r{i:02d}"
        assert sorted(p.name for p in (run_dir / folder).iterdir()) == sorted(p.name for p in (local_baseline / folder).iterdir())
        ours, theirs = (json.loads((d / folder / "result.json").read_text()) for d in (run_dir, local_baseline))
        assert (ours["status"], ours["data"], ours["input"]) == (theirs["status"], theirs["data"], theirs["input"])
    assert not list(run_dir.rglob("*.tmp"))
    # The control for the rate-limit test below: with no limit, two workers' rows hit the host together.
    gaps = [b - a for a, b in zip(hits, hits[1:])]
    assert min(gaps) < 0.25, gaps

    # --resume with the other engine: the local engine finishes a Ray run, running only its unfinished rows.
    unfinished = ["r03", "r16"]
    for sid in unfinished:  # as if the run had stopped in the middle of these
        (run_dir / sid / "result.json").unlink()
        checkpoint = json.loads((run_dir / sid / "checkpoint.json").read_text())
        (run_dir / sid / "checkpoint.json").write_text(json.dumps({**checkpoint, "state": "running"}))
    before = len(ray_cluster.read_text().splitlines())
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SCRIPTED_RUNNER_PIDS", str(ray_cluster))  # the local runner logs its starts to the same file
        resumed = await run_batch(twenty_rows(server), spec=SPEC, runner=make_runner(), browser=browser,
                                  run_dir=run_dir, resume=True, concurrency=2)
    write_reports(run_dir, resumed.results)
    ran = sorted(line.split()[0] for line in ray_cluster.read_text().splitlines()[before:])
    assert ran == unfinished and sorted(resumed.skipped) == sorted(set(resumed.results) - set(unfinished))
    assert (run_dir / "combined.csv").read_text() == (local_baseline / "combined.csv").read_text()
    assert [json.loads((run_dir / sid / "result.json").read_text())["attempt"] for sid in unfinished] == [2, 2]


async def test_two_workers_never_start_two_rows_on_one_host_closer_than_the_limit(
    ray_cluster: Path, server, tmp_path: Path
) -> None:
    rows = [Sample(id=f"p{i}", url=server.url(f"products/{i % 6 + 1}.html?polite={i}")) for i in range(5)]
    requested: dict[str, float] = {}  # row id -> when the host saw the row's first request (wall clock)

    def serve(request):
        requested.setdefault(f"p{request.query['polite']}", time.time())
        return server.serve_file(request.path)

    with contextlib.ExitStack() as stack:
        for n in range(1, 7):
            stack.enter_context(server.route(f"/products/{n}.html", serve))
        result = await run_batch_on_ray(rows, spec=SPEC, runner=RunnerFactory("_scripted_runner:make_goto_runner"),
                                        run_dir=tmp_path / "run", rate_limit=3.0, options=RayOptions(workers=2, contexts_per_worker=2))
    assert result.counts["done"] == 5 and sorted(requested) == [row.id for row in rows]
    # The keeper, one actor for both workers, gave the host's turns 3 s apart by its one clock; each
    # row's result.json keeps its turn. Read from the keeper, not from request times: between the
    # turn and the request lie a reply to the worker and Playwright driving Chromium, which a loaded
    # machine can stretch by a second for one row and not the next.
    turns = {sid: datetime.fromisoformat(r["host_turn_at"]).timestamp() for sid, r in result.results.items()}
    ordered = sorted(turns.values())
    assert all(b - a >= 2.99 for a, b in zip(ordered, ordered[1:])), [round(b - a, 3) for a, b in zip(ordered, ordered[1:])]
    # No row's request came before its turn: the rows' first requests are spaced by the turns.
    assert all(requested[sid] >= turns[sid] - 0.01 for sid in turns), {sid: round(requested[sid] - turns[sid], 3) for sid in turns}
    # Control: the test above, the same two workers with no limit, sees its rows hit the host together;
    # a limiter of its own in each worker instead of the one keeper gave this test turns 1.2-1.8 s apart.


def test_bad_options_are_typed_errors() -> None:
    with pytest.raises(ConfigurationError, match="--address must be auto, ray://host:port or host:port, got 'ray:/x'"):
        RayOptions(address="ray:/x").check()
    with pytest.raises(ConfigurationError, match="--browser-endpoint must be a CDP URL"):
        RayOptions(browser_endpoint="chromium.example:9222").check()
    with pytest.raises(ConfigurationError, match="workers must be at least 1"):
        RayOptions(workers=0).check()
    RayOptions(address="ray://head.example:10001", browser_endpoint="wss://browsers.example/playwright?token=x").check()


async def test_without_ray_installed_the_error_says_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` meets when Ray is not installed
    with pytest.raises(ConfigurationError, match=r"--engine ray needs Ray: pip install 'stagehand_py\[ray\]'"):
        await run_batch_on_ray([Sample(id="a", url="http://127.0.0.1:9/")], spec=SPEC, runner=RUNNER, run_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()  # nothing started, nothing written


def test_the_cli_checks_engine_options_before_starting_anything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from stagehand_py.batch._cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "task.json").write_text(json.dumps({"goal": "g"}))
    code = main(["run", "--task", "task.json", "--url", "http://127.0.0.1:9/", "--engine", "ray", "--address", "head:port"])
    assert code == 1 and "--address must be auto, ray://host:port or host:port, got 'head:port'" in capsys.readouterr().err
    code = main(["run", "--task", "task.json", "--url", "http://127.0.0.1:9/", "--engine", "ray", "--browser-endpoint", "ftp://x"])
    assert code == 1 and "--browser-endpoint must be a CDP URL" in capsys.readouterr().err
    assert not (tmp_path / "evidence").exists()


def test_only_the_ray_engine_imports_ray() -> None:
    code = ("import sys, stagehand_py, stagehand_py.batch, stagehand_py.batch._cli; "
            "print(sorted(m for m in ('ray', 'fsspec') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


async def test_rows_run_in_a_remote_browser_given_by_its_endpoint(ray_cluster: Path, server, tmp_path: Path) -> None:
    """--browser-endpoint against real remote browsers started here: a Playwright server and a
    Chromium CDP endpoint. Every product request carries the remote browser's user agent, so the
    rows ran there, not in a browser the workers launched. The two runs go at once (one worker
    each, the cluster's two CPUs); each kind's rows carry its name in their URLs, so each kind's
    requests are checked on their own."""
    from ._endpoints import cdp_chromium, playwright_server

    agents: dict[str, list[str]] = {"playwright": [], "cdp": []}

    def serve(request):
        kind = request.query["kind"]
        agents[kind].append(next((v for k, v in request.headers.items() if k.lower() == "user-agent"), ""))
        return server.serve_file(request.path)

    async def run(kind: str, url: str):
        rows = [Sample(id=f"e{i}", url=server.url(f"products/{i}.html?kind={kind}")) for i in (1, 2, 3)]
        return await run_batch_on_ray(rows, spec=SPEC, runner=RunnerFactory("_scripted_runner:make_goto_runner"),
                                      run_dir=tmp_path / f"run_{kind}",
                                      options=RayOptions(workers=1, contexts_per_worker=2, browser_endpoint=url))

    with (playwright_server("remote-playwright-server") as playwright_url,
          cdp_chromium("remote-cdp-chromium", tmp_path / "profile") as cdp_url, contextlib.ExitStack() as routes):
        for n in (1, 2, 3):
            routes.enter_context(server.route(f"/products/{n}.html", serve))
        results = dict(zip(("playwright", "cdp"), await asyncio.gather(run("playwright", playwright_url), run("cdp", cdp_url)),
                           strict=True))
    for kind, result in results.items():
        assert result.counts["done"] == 3, (kind, result.results)
        assert agents[kind] == [f"remote-{'playwright-server' if kind == 'playwright' else 'cdp-chromium'}"] * 3, (kind, agents)


async def test_an_endpoint_nobody_answers_is_a_typed_error(ray_cluster: Path, server, tmp_path: Path) -> None:
    from ._endpoints import free_port

    with pytest.raises(BrowserError, match=r"the Ray workers could not start their browsers: BrowserError: could not "
                                           r"attach to the browser at http://127.0.0.1:\d+ \(cdp endpoint\)"):
        await run_batch_on_ray([Sample(id="x", url=server.url("products/1.html"))], spec=SPEC, runner=RUNNER,
                               run_dir=tmp_path / "run",
                               options=RayOptions(workers=1, browser_endpoint=f"http://127.0.0.1:{free_port()}"))
