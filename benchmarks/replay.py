"""Agent runs that replay: the local agent tasks run once with the embedded model, then replayed.

    nice -n 5 python benchmarks/replay.py                       # login, multi-field, wizard
    python benchmarks/replay.py --only login --max-steps 8

For each task of benchmarks/local_agent.py that has a button to rename (a copy of tests/assets is
served on 127.0.0.1, one Stagehand with a cache directory per phase):

1. ``live``: ``agent().execute(...)`` with the embedded model (the run is stored when it is done);
2. ``replay``: the same task again: model calls (0 expected), seconds, success (checked from
   outside the agent, as local_agent.py does);
3. ``renamed``: the task's button renamed in the served page (``Sign in`` -> ``Log in``, ...):
   calls (1 expected: the heal of that step) and success.

Prints one line per phase and a table; writes .bench/replay.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _server import ASSETS, StaticServer
from local_agent import DEFAULT_MODEL, TASKS, Task

from stagehand_py import Stagehand, StagehandError
from stagehand_py.llm import LLMClient, LocalModel
from stagehand_py.llm._providers._local import models_dir

#: Per task: the served file, and the button text to rename in it for the third phase.
RENAMES: dict[str, tuple[str, str, str]] = {
    "login": ("forms.html", 'id="submit">Sign in</button>', 'id="submit">Log in</button>'),
    "multi-field": ("forms.html", 'id="submit">Sign in</button>', 'id="submit">Log in</button>'),
    "wizard": ("wizard/step3.html", ">Finish</button>", ">Complete</button>"),
}


@dataclass
class Phase:
    task: str
    phase: str
    success: bool
    status: str
    calls: int
    seconds: float
    replayed: int
    healed: int
    fell_back: bool
    detail: str


async def run_phase(task: Task, phase: str, client: LLMClient, server: StaticServer, cache: Path, *,
                    max_steps: int, task_timeout: float, token_budget: int) -> Phase:
    sh = await Stagehand.launch(model=client, token_budget=token_budget, cache_dir=cache)
    before = client.metrics.total
    started = time.perf_counter()
    status, detail, success, replayed, healed, fell_back = "error", "", False, 0, 0, False
    try:
        await sh.page.goto(server.url(task.page))
        result = await sh.agent(allowed_domains=["127.0.0.1"]).execute(
            task.instruction, max_steps=max_steps, output=task.output, variables=task.variables, timeout=task_timeout)
        status = result.status
        success, detail = await task.check(sh, result)
        if result.replay is not None:
            replayed, healed = len(result.replay.replayed), len(result.replay.healed)
            fell_back = result.replay.fell_back
            if fell_back:
                detail = f"{detail}; fell back: {result.replay.reason[:80]}"
    except StagehandError as exc:
        detail = f"{type(exc).__name__}: {str(exc)[:120]}"
    finally:
        await sh.close()
    calls = client.metrics.total.requests - before.requests
    return Phase(task.name, phase, success, status, calls, time.perf_counter() - started, replayed, healed, fell_back,
                 detail)


def table(phases: list[Phase]) -> str:
    lines = ["| task | phase | done | model calls | seconds | replayed | healed | fell back |", "|---|---|---|---|---|---|---|---|"]
    for p in phases:
        lines.append(f"| {p.task} | {p.phase} | {'yes' if p.success else 'no'} | {p.calls} | {p.seconds:.1f} | "
                     f"{p.replayed} | {p.healed} | {'yes' if p.fell_back else 'no'} |")
    return "\n".join(lines)


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--model", default=None, help=f"GGUF path (default: {DEFAULT_MODEL} in the models folder)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--token-budget", type=int, default=6000)
    parser.add_argument("--max-steps", type=int, default=10)
    parser.add_argument("--task-timeout", type=float, default=400.0)
    parser.add_argument("--only", nargs="*", default=None, help=f"tasks (default: {', '.join(RENAMES)})")
    parser.add_argument("--out", type=Path, default=ROOT / ".bench" / "replay.json")
    args = parser.parse_args(argv)
    path = Path(args.model) if args.model else (models_dir() or Path(".")) / DEFAULT_MODEL
    model = LocalModel(path, n_ctx=8192, n_threads=args.threads)
    client = LLMClient(model)
    folder = Path(tempfile.mkdtemp(prefix="replay-bench-"))
    site = folder / "assets"
    shutil.copytree(ASSETS, site)
    server = StaticServer(site).start()
    phases: list[Phase] = []
    names = args.only or list(RENAMES)
    try:
        for task in [t for t in TASKS if t.name in names]:
            cache = folder / f"cache-{task.name}"
            file, old, new = RENAMES[task.name]
            original = (site / file).read_text(encoding="utf-8")
            for phase in ("live", "replay", "renamed"):
                if phase == "renamed":
                    (site / file).write_text(original.replace(old, new), encoding="utf-8")
                outcome = await run_phase(task, phase, client, server, cache, max_steps=args.max_steps,
                                          task_timeout=args.task_timeout, token_budget=args.token_budget)
                phases.append(outcome)
                print(f"{task.name:12} {phase:8} {'done' if outcome.success else 'NOT DONE':8} {outcome.calls:3} calls "
                      f"{outcome.seconds:7.1f} s  replayed {outcome.replayed} healed {outcome.healed}  {outcome.detail}",
                      flush=True)
            (site / file).write_text(original, encoding="utf-8")
    finally:
        server.stop()
        await model.aclose()
        shutil.rmtree(folder, ignore_errors=True)
    print()
    print(table(phases))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {"model": str(path), "max_steps": args.max_steps, "phases": [asdict(p) for p in phases]}
    runs = json.loads(args.out.read_text()) if args.out.exists() else []
    args.out.write_text(json.dumps([*runs, record], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
