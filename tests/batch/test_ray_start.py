"""Starting Ray on a loaded machine: a raylet that misses Ray's start limit (30 s, fixed in Ray
2.60) is tried again, and when it never makes it the run ends with a typed, actionable error.

"Loaded" is made real and certain: the test stops (SIGSTOP) the raylet the driver starts, so it
cannot register in time, exactly as a starved one does. Each driver runs in a process of its
own (Ray is process-wide state), both cases at once; every process a driver starts carries its
mark in its environment, by which the test finds the raylet and checks that nothing is left afterwards.
While its raylet is stopped, a driver's Ray reads a clock that has passed the limit (see
tests/batch/_ray_start_driver.py): the miss is Ray's own check on a raylet that cannot register,
without sitting out 30 s of nothing; a raylet that runs gets the full 30 s of real time.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._ray_start_driver import MARK, marked

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="finds processes through /proc")


class RayletStopper(threading.Thread):
    """Stops the first ``count`` raylets that appear with the mark (SIGSTOP: alive, but silent)."""

    def __init__(self, mark: str, count: int) -> None:
        super().__init__(daemon=True)
        self.mark, self.count = mark, count
        self.stopped: list[int] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            for pid, (name, _state) in marked(self.mark).items():
                if name == "raylet" and pid not in self.stopped and len(self.stopped) < self.count:
                    os.kill(pid, signal.SIGSTOP)
                    self.stopped.append(pid)
            time.sleep(0.05)


class Driver:
    """One run of tests/batch/_ray_start_driver.py in a process of its own, its first
    ``stop_raylets`` raylets stopped; started at once, waited for by :meth:`finish`."""

    def __init__(self, run_dir: Path, url: str, attempts: int, stop_raylets: int) -> None:
        self.run_dir, self.mark = run_dir, uuid.uuid4().hex
        env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), MARK: self.mark,
               "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)]), "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
        self.stopper = RayletStopper(self.mark, stop_raylets)
        self.stopper.start()
        self.process = subprocess.Popen([sys.executable, str(HERE / "_ray_start_driver.py"), str(run_dir), url, str(attempts)],
                                        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        start_new_session=True)

    def finish(self) -> tuple[int, str, str, list[int]]:
        out, err = self.process.communicate(timeout=600)
        # Nothing the run started is left: not the stopped raylets, not the GCS, not a worker.
        deadline = time.monotonic() + 60
        while marked(self.mark) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert marked(self.mark) == {}
        return self.process.returncode, out, err, self.stopper.stopped

    def stop(self) -> None:
        self.stopper.done.set()
        for pid in marked(self.mark):  # only if a test failed: the processes it started, by their ids
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        self.process.wait()


@pytest.fixture(scope="module")
def drivers(server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Driver]]:
    """Both cases started together: each mostly waits for Ray to start (twice for the retried
    case), so running them side by side halves the file's time."""
    url = server.url("products/1.html")
    started = {"retried": Driver(tmp_path_factory.mktemp("retried") / "run", url, attempts=3, stop_raylets=1),
               "never": Driver(tmp_path_factory.mktemp("never") / "run", url, attempts=2, stop_raylets=2)}
    try:
        yield started
    finally:
        for run in started.values():
            run.stop()


def test_a_raylet_that_misses_the_start_limit_is_tried_again(drivers: dict[str, Driver]) -> None:
    code, out, err, stopped = drivers["retried"].finish()
    assert code == 0, err[-3000:]
    assert "counts {'done': 1" in out
    assert "the local Ray node did not start in time (try 1 of 3); trying again" in err
    assert len(stopped) == 1


def test_a_raylet_that_never_starts_is_a_typed_actionable_error(drivers: dict[str, Driver]) -> None:
    run = drivers["never"]
    code, _out, err, stopped = run.finish()
    assert code == 1, err[-3000:]
    assert "Traceback" not in err
    assert ("RayStartError: the local Ray node did not start: its raylet missed Ray's 30 s start limit 2 time(s) "
            "(the machine is too loaded). Try again when it is quieter, start a cluster yourself (`ray start --head`) "
            "and pass --address auto, or run with --engine local.") in err
    assert len(stopped) == 2
    assert not (run.run_dir / "s1" / "result.json").exists()  # no row ran, none pretends it did
