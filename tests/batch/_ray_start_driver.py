"""A one-row batch on the Ray engine, starting its own one-node cluster, for
tests/batch/test_ray_start.py: ``python _ray_start_driver.py <run_dir> <url> <start_attempts>``.
Prints the counts, or the typed error (its class and message) and exits 1."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from stagehand_py import StagehandError
from stagehand_py.batch import RayOptions, RunnerFactory, Sample, TaskSpec, run_batch_on_ray


async def main(run_dir: str, url: str, attempts: int) -> None:
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
