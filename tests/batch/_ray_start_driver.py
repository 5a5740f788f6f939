"""A one-row batch on the Ray engine, starting its own one-node cluster, for
tests/batch/test_ray_start.py: ``python _ray_start_driver.py <run_dir> <url> <start_attempts>``.
Prints the counts, or the typed error (its class and message) and exits 1.

Ray 2.60 gives a raylet 30 s (a constant) to register; the test freezes (SIGSTOP) the raylets
it wants to miss that limit, so sitting the 30 s out proves nothing the freeze does not. While a
raylet of this run is frozen, and only then, Ray's node start (``ray._private.node``) sees the
time that would pass: its lookup of the node answers "not registered" at once instead of after
its own 30 s wait, and its clock reads past the limit. The limit is still Ray's own check,
raising Ray's own error; a raylet that is not frozen gets the full 30 s of real time.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stagehand_py import StagehandError
from stagehand_py.batch import RayOptions, RunnerFactory, Sample, TaskSpec, run_batch_on_ray

#: The environment variable (and its value) every process of this run carries (set by the test).
MARK = "STAGEHAND_RAY_START_TEST"
#: Ray's raylet start limit in seconds (ray/_private/node.py, not configurable in 2.60).
RAY_START_LIMIT = 30


def marked(mark: str) -> dict[int, tuple[str, str]]:
    """Living processes (pid -> name, state letter) whose environment carries the mark (from /proc)."""
    found = {}
    needle = f"{MARK}={mark}".encode()
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found[int(entry.name)] = ((entry / "comm").read_text().strip(), state)
        except OSError:
            continue
    return found


class FrozenRayletTime:
    """What Ray's node start reads while a raylet of this run is frozen (see the module docstring)."""

    def __init__(self, mark: str, get_node: Callable[..., Any]) -> None:
        self.mark, self.get_node = mark, get_node
        self.skipped = 0.0

    def frozen(self) -> bool:
        return ("raylet", "T") in marked(self.mark).values()  # stopped: it cannot register

    def lookup(self, *args: Any, **kwargs: Any) -> Any:
        """``ray._private.services.get_node``: Ray's "not registered" error at once for a frozen raylet."""
        if self.frozen():
            raise RuntimeError("the raylet is frozen (SIGSTOP): it has not registered")
        return self.get_node(*args, **kwargs)

    def monotonic(self) -> float:
        """``time.monotonic`` of ray._private.node: past Ray's start limit at every reading taken
        while a raylet is frozen, so the first check after the freeze sees the limit passed whether
        the freeze came before or after Ray noted its start time."""
        if self.frozen():
            self.skipped += RAY_START_LIMIT + 1
        return time.monotonic() + self.skipped

    def __getattr__(self, name: str) -> Any:  # the rest of the time module
        return getattr(time, name)


async def main(run_dir: str, url: str, attempts: int) -> None:
    import ray._private.node
    import ray._private.services

    frozen = FrozenRayletTime(os.environ[MARK], ray._private.services.get_node)
    ray._private.node.time = frozen  # type: ignore[attr-defined]
    ray._private.services.get_node = frozen.lookup
    options = RayOptions(workers=1, contexts_per_worker=1, num_cpus=1, start_attempts=attempts,
                         runtime_env={"env_vars": {"PYTHONPATH": os.environ["PYTHONPATH"]}})
    result = await run_batch_on_ray([Sample(id="s1", url=url)], spec=TaskSpec(goal="Open the page", max_time=120),
                                    runner=RunnerFactory("_scripted_runner:make_goto_runner"), run_dir=Path(run_dir),
                                    options=options)
    print("counts", result.counts, flush=True)


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
    except StagehandError as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        sys.exit(1)
