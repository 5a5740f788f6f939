"""Accuracy and speed of a local GGUF model on the test pages: choice mode vs the plain schema.

    python benchmarks/local_model_accuracy.py                       # the 1.5B from the models folder
    python benchmarks/local_model_accuracy.py --model path/to.gguf --threads 2

Five tasks on tests/assets pages (four observe, one extract), temperature 0, each run once in
each mode with the same loaded model: the plain ``{element_id, description, method, arguments}``
schema, and choice mode (pick a ``"role: name [id]"`` line from an enum). An observe task is
right when its first action's selector names the expected element; the extract task when the
price is right. Prints a table; writes .bench/local_model_accuracy.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from _server import StaticServer  # noqa: E402

from stagehand_py import Stagehand, StagehandError  # noqa: E402
from stagehand_py.llm import LLMClient, LocalModel  # noqa: E402
from stagehand_py.llm._providers._local import models_dir  # noqa: E402

DEFAULT_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


@dataclass(frozen=True)
class Task:
    name: str
    page: str
    instruction: str
    #: JS predicate on the chosen element (observe), or the expected answer text (extract).
    expect: str
    kind: str = "observe"


TASKS = [
    Task("password field", "forms.html", "the password field", "e => e.id === 'password'"),
    Task("submit button", "forms.html", "the button that submits the sign-in form", "e => e.id === 'submit'"),
    Task("billing tab", "aria.html", "the Billing tab", "e => e.textContent.trim() === 'Billing'"),
    Task("products link", "links.html", "the link to the products page",
         "e => e.textContent.includes('Absolute link to products')"),
    Task("backpack price", "products.html", "the price of the Canvas Backpack", "54", kind="extract"),
]

PRICE = {"type": "object", "properties": {"price": {"type": "string"}}, "required": ["price"]}


@dataclass
class Outcome:
    mode: str
    task: str
    right: bool
    seconds: float
    calls: int
    detail: str


async def run_task(sh: Stagehand, client: LLMClient, server: StaticServer, task: Task, mode: str) -> Outcome:
    await sh.page.goto(server.url(task.page))
    before = client.metrics.total.requests
    started = time.perf_counter()
    right, detail = False, ""
    try:
        if task.kind == "observe":
            actions = await sh.observe(task.instruction)
            if actions:
                right = bool(await sh.page.locator(actions[0].selector).evaluate(task.expect))
                detail = f"{actions[0].method} {actions[0].description!r}"
            else:
                detail = "no element"
        else:
            data = await sh.extract(task.instruction, PRICE)
            right = task.expect in str(data.get("price", ""))
            detail = f"price={data.get('price')!r}"
    except StagehandError as exc:
        detail = f"{type(exc).__name__}: {str(exc)[:120]}"
    seconds = time.perf_counter() - started
    return Outcome(mode, task.name, right, seconds, client.metrics.total.requests - before, detail)


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help=f"GGUF path (default: {DEFAULT_MODEL} in the models folder)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--token-budget", type=int, default=6000)
    parser.add_argument("--only", nargs="*", default=None, help="task names to run (default: all)")
    parser.add_argument("--modes", nargs="*", default=["plain", "choice"], choices=["plain", "choice"])
    parser.add_argument("--out", type=Path, default=ROOT / ".bench" / "local_model_accuracy.json")
    args = parser.parse_args(argv)
    path = Path(args.model) if args.model else (models_dir() or Path(".")) / DEFAULT_MODEL
    model = LocalModel(path, n_ctx=args.n_ctx, n_threads=args.threads)
    server = StaticServer().start()
    outcomes: list[Outcome] = []
    sh0 = await Stagehand.launch()
    try:
        for mode in args.modes:
            client = LLMClient(model, choice_mode=mode == "choice", max_reasks=1)
            sh = Stagehand(sh0.page, model=client, token_budget=args.token_budget)
            for task in [t for t in TASKS if args.only is None or t.name in args.only]:
                outcome = await run_task(sh, client, server, task, mode)
                outcomes.append(outcome)
                print(f"{mode:6} {task.name:16} {'right' if outcome.right else 'WRONG':5} "
                      f"{outcome.seconds:6.1f} s  {outcome.calls} call(s)  {outcome.detail}", flush=True)
    finally:
        await sh0.close()
        server.stop()
        await model.aclose()
    summary: dict[str, Any] = {"model": str(path), "threads": args.threads, "token_budget": args.token_budget}
    print()
    for mode in args.modes:
        mine = [o for o in outcomes if o.mode == mode]
        calls = sum(o.calls for o in mine)
        seconds = sum(o.seconds for o in mine)
        summary[mode] = {"right": sum(o.right for o in mine), "of": len(mine), "calls": calls,
                         "seconds": round(seconds, 1), "seconds_per_call": round(seconds / max(calls, 1), 1)}
        print(f"{mode:6}: {summary[mode]['right']}/{len(mine)} right, {calls} calls, "
              f"{summary[mode]['seconds_per_call']} s per call ({seconds:.0f} s in all)")
    summary["outcomes"] = [asdict(o) for o in outcomes]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
