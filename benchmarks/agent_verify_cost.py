"""What checking a ``done`` claim costs per run, with the embedded model: the same agent tasks run
with ``self_check`` off and on (``verify``'s model-free checks run in both), and per run the
status, whether the answer is right, steps, model calls and seconds, and the verdict's own
calls and seconds.

    python benchmarks/agent_verify_cost.py                     # three tasks, off then on, a wrapped page
    python benchmarks/agent_verify_cost.py --repeat 2 --model local/<file>.gguf
    python benchmarks/agent_verify_cost.py --task "count open" --self-check on   # the verdict's cost, one run

The tasks run on the issue tracker of the test pages (tests/assets/agent/tracker: 40 issues, 8
open, a status filter after the table), served on 127.0.0.1 by this script: count the open
issues, read an issue's priority, read an issue page's title. Right means the output equals the
page's truth.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))  # the test pages' server and the Chromium flags

from _browser import launch_chromium  # noqa: E402
from _real_apps import EMBEDDED, load, markdown_table  # noqa: E402
from _server import StaticServer  # noqa: E402

from stagehand_py import Stagehand, StagehandError  # noqa: E402


def _one_field(name: str, kind: str) -> dict[str, Any]:
    return {"type": "object", "properties": {name: {"type": kind}}, "required": [name], "additionalProperties": False}


#: (name, instruction, output schema, the right output)
TASKS: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
    ("count open", "How many open issues are there?", _one_field("count", "integer"), {"count": 8}),
    ("read priority", "Open the issue Crash number 15 and tell me its priority.", _one_field("priority", "string"),
     {"priority": "Urgent"}),
    ("read title", "Open the page of the issue Crash number 15 and tell me its title.", _one_field("title", "string"),
     {"title": "Crash number 15"}),
]


async def run_task(sh: Stagehand, server: StaticServer, task: tuple[str, str, dict[str, Any], dict[str, Any]], *,
                   self_check: bool, max_steps: int) -> list[Any]:
    name, instruction, output, truth = task
    await sh.page.goto(server.url("agent/tracker/issues.html"))
    before, started = sh.metrics.total, time.perf_counter()
    verdict_before = sh.metrics.by_purpose.get("agent_verdict")
    status, right, steps, said = "error", False, 0, ""
    try:
        result = await sh.agent(self_check=self_check).execute(instruction, max_steps=max_steps, output=output)
        status, steps = str(result.status), len(result.steps)
        right = result.output == truth
        failed = "; ".join(f"step {c.step} {c.check}: {c.detail}" for c in result.checks if c.passed is False)
        said = f"output {result.output}" + (f"; failed checks: {failed}" if failed else "")
    except StagehandError as exc:
        status = f"error: {type(exc).__name__}"
        said = str(exc)[:200]
    seconds = time.perf_counter() - started
    used = sh.metrics.total - before
    verdict = sh.metrics.by_purpose.get("agent_verdict")
    v_calls = (verdict.requests if verdict else 0) - (verdict_before.requests if verdict_before else 0)
    v_ms = (verdict.wall_ms if verdict else 0.0) - (verdict_before.wall_ms if verdict_before else 0.0)
    print(f"self_check={self_check!s:5} {name:14} {status:11} {'right' if right else 'wrong':5} {steps:2} steps "
          f"{used.requests:2} calls {seconds:6.1f} s; verdict {v_calls} call(s) {v_ms / 1000:5.1f} s | {said[:300]}",
          flush=True)
    return ["on" if self_check else "off", name, status, "right" if right else "wrong", steps, used.requests,
            f"{seconds:.1f}", v_calls, f"{v_ms / 1000:.1f}"]


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--model", default=EMBEDDED, help="the model (default: the embedded one)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each task with each setting")
    parser.add_argument("--max-steps", type=int, default=6, help="execute(max_steps=...) per run")
    parser.add_argument("--task", action="append", choices=[t[0] for t in TASKS],
                        help="run only this task (repeatable; default: all three)")
    parser.add_argument("--self-check", choices=["both", "on", "off"], default="both",
                        help="the settings to run (on alone gives the verdict's own cost; default both)")
    args = parser.parse_args(argv)
    tasks = [t for t in TASKS if not args.task or t[0] in args.task]
    settings = {"both": (False, True), "on": (True,), "off": (False,)}[args.self_check]
    from playwright.async_api import async_playwright

    print(f"model {args.model}; {load()}", flush=True)
    rows: list[list[Any]] = []
    with StaticServer() as server:
        async with async_playwright() as pw:
            browser = await launch_chromium(pw)
            try:
                sh = Stagehand(await browser.new_page(), model=args.model)
                for self_check in settings:
                    for task in tasks:
                        for _ in range(args.repeat):
                            rows.append(await run_task(sh, server, task, self_check=self_check, max_steps=args.max_steps))
                await sh.close()
            finally:
                await browser.close()
    print(markdown_table(["self_check", "task", "status", "answer", "steps", "model calls", "s", "verdict calls",
                          "verdict s"], rows))
    for setting in ("off", "on"):
        mine = [r for r in rows if r[0] == setting]
        if not mine:
            continue
        print(f"self_check {setting}: {sum(r[5] for r in mine) / len(mine):.1f} calls and "
              f"{sum(float(r[6]) for r in mine) / len(mine):.0f} s a run; the verdict "
              f"{sum(r[7] for r in mine) / len(mine):.1f} calls and {sum(float(r[8]) for r in mine) / len(mine):.1f} s a run")
    print(load())
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
