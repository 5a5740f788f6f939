"""Accuracy and speed of the embedded model on the project's test pages: choice mode vs plain schema.

    python benchmarks/local_model_accuracy.py                       # the pinned 1.5B from the models folder
    python benchmarks/local_model_accuracy.py --model path/to.gguf --threads 2 --only "billing tab"

25 tasks on tests/assets pages (forms, ARIA widgets, a custom dropdown, shadow roots, nested
iframes, a long page, a wizard, a product list): 10 observe, 8 act and 7 extract, at temperature
0, each run once per mode with the same loaded model: the plain ``{element_id, description,
method, arguments}`` schema, and choice mode (pick one of the page's own lines from an enum).

- observe is right when its first action targets the expected outline line (same XPath);
- act is right when the page changed as asked (a JS check, in the frame that holds the target);
- extract is right when the expected text is in the answer.

Prints one line per task, then pass rate, model calls, seconds and tokens per call per mode;
writes .bench/local_model_accuracy.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _local_bench import add_model_options, open_model
from _server import StaticServer

from stagehand_py import Stagehand, StagehandError
from stagehand_py.llm import LLMClient


@dataclass(frozen=True)
class Task:
    name: str
    page: str
    instruction: str
    #: observe: a regex for the expected outline line's "role: name"; act: a JS expression true
    #: once done (evaluated in the frame whose URL ends with ``frame``); extract: expected text.
    expect: str
    kind: str = "observe"
    frame: str = ""


TASKS = [
    Task("password field", "forms.html", "the password field", r"textbox: Password"),
    Task("remember checkbox", "forms.html", "the Remember me checkbox", r"checkbox: Remember me"),
    Task("country dropdown", "forms.html", "the Country dropdown", r"combobox: Country"),
    Task("about textarea", "forms.html", "the About you text box", r"textbox: About you"),
    Task("billing tab", "aria.html", "the Billing tab", r"tab: Billing"),
    Task("actions menu", "aria.html", "the Actions menu button", r"button: Actions"),
    Task("closed shadow button", "shadow.html", "the Closed shadow button", r"button: Closed shadow button"),
    Task("inner frame button", "frames/outer.html", "the Inner button in the innermost frame", r"button: Inner button"),
    Task("products link", "links.html", "the link to the products page", r"link: Absolute link to products"),
    Task("bottom button", "scroll.html", "the button at the bottom of the page", r"button: Bottom of page"),
    Task("tick remember", "forms.html", "tick the Remember me checkbox",
         "document.querySelector('#remember').checked", kind="act"),
    Task("choose pro plan", "forms.html", "choose the Pro plan",
         "document.querySelector('input[value=pro]').checked", kind="act"),
    Task("select germany", "forms.html", "select Germany in the Country dropdown",
         "document.querySelector('#country').value === 'de'", kind="act"),
    Task("open billing tab", "aria.html", "click the Billing tab",
         "document.querySelector('#tab-billing').getAttribute('aria-selected') === 'true'", kind="act"),
    Task("light button", "shadow.html", "click the Light DOM button",
         "document.querySelector('#light-button').textContent === 'Light clicked'", kind="act"),
    Task("outer button", "frames/outer.html", "click the Outer button",
         "document.querySelector('#outer-button').textContent === 'Outer clicked'", kind="act"),
    Task("middle frame button", "frames/outer.html", "click the Middle button",
         "document.querySelector('#middle-button').textContent === 'Middle clicked'", kind="act",
         frame="middle.html"),
    Task("type full name", "wizard/step1.html", "type Ada Lovelace into the Full name field",
         "document.querySelector('#name').value === 'Ada Lovelace'", kind="act"),
    Task("backpack price", "products.html", "the price of the Canvas Backpack", "54", kind="extract"),
    Task("shoes price", "products.html", "the price of the Trail Runner Shoes", "89.99", kind="extract"),
    Task("cheapest product", "products.html", "the name of the cheapest product", "Camp Mug", kind="extract"),
    Task("product count", "products.html", "how many products there are in total, per the page", "18",
         kind="extract"),
    Task("page heading", "forms.html", "the main heading of the page", "Sign in", kind="extract"),
    Task("switch label", "aria.html", "the label of the switch", "Email notifications", kind="extract"),
    Task("wizard step", "wizard/step1.html", "the page heading", "Step 1 of 3", kind="extract"),
]

ANSWER = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


@dataclass
class Outcome:
    mode: str
    task: str
    kind: str
    right: bool
    seconds: float
    calls: int
    input_tokens: int
    output_tokens: int
    detail: str


async def _check_observe(sh: Stagehand, task: Task) -> tuple[bool, str]:
    snapshot = await sh.snapshot()
    wanted = re.search(rf"\[(\d+-\d+)\] {task.expect}", snapshot.tree)
    actions = await sh.observe(task.instruction)
    if not actions:
        return False, "no element"
    target = snapshot.xpath_map.get(wanted.group(1)) if wanted else None
    return actions[0].selector == f"xpath={target}", f"{actions[0].method} {actions[0].description!r}"


async def _check_act(sh: Stagehand, task: Task) -> tuple[bool, str]:
    result = await sh.act(task.instruction)
    frame = next((f for f in sh.page.frames if task.frame and f.url.endswith(task.frame)), sh.page.main_frame)
    done = bool(await frame.evaluate(task.expect))
    return done, f"success={result.success}: {result.message[:80]}"


async def _check_extract(sh: Stagehand, task: Task) -> tuple[bool, str]:
    data = await sh.extract(task.instruction, ANSWER)
    answer = str(data.get("answer", "")) if isinstance(data, dict) else str(data)
    return task.expect.lower() in answer.lower(), f"answer={answer[:60]!r}"


CHECKS = {"observe": _check_observe, "act": _check_act, "extract": _check_extract}


async def run_task(sh: Stagehand, client: LLMClient, server: StaticServer, task: Task, mode: str) -> Outcome:
    await sh.page.goto(server.url(task.page))
    before = client.metrics.total
    started = time.perf_counter()
    try:
        right, detail = await CHECKS[task.kind](sh, task)
    except StagehandError as exc:
        right, detail = False, f"{type(exc).__name__}: {str(exc)[:120]}"
    seconds = time.perf_counter() - started
    after = client.metrics.total
    return Outcome(mode, task.name, task.kind, right, seconds, after.requests - before.requests,
                   after.input_tokens - before.input_tokens, after.output_tokens - before.output_tokens, detail)


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_model_options(parser)
    parser.add_argument("--only", nargs="*", default=None, help="task names to run (default: all)")
    parser.add_argument("--modes", nargs="*", default=["plain", "choice"], choices=["plain", "choice"])
    parser.add_argument("--out", type=Path, default=ROOT / ".bench" / "local_model_accuracy.json")
    args = parser.parse_args(argv)
    path, model = open_model(args)
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
                print(f"{mode:6} {task.kind:7} {task.name:20} {'right' if outcome.right else 'WRONG':5} "
                      f"{outcome.seconds:6.1f} s  {outcome.calls} call(s) {outcome.input_tokens:5} tok in  "
                      f"{outcome.detail}", flush=True)
    finally:
        await sh0.close()
        server.stop()
        await model.aclose()
    summary: dict[str, Any] = {"model": str(path), "threads": args.threads, "token_budget": args.token_budget}
    print()
    print("| mode | right | observe | act | extract | model calls | s per call | tokens in per call | tokens out per call |")
    print("|---|---|---|---|---|---|---|---|---|")
    for mode in args.modes:
        mine = [o for o in outcomes if o.mode == mode]
        calls = sum(o.calls for o in mine)
        seconds = sum(o.seconds for o in mine)
        per_kind = {k: f"{sum(o.right for o in mine if o.kind == k)}/{sum(o.kind == k for o in mine)}"
                    for k in ("observe", "act", "extract")}
        summary[mode] = {"right": sum(o.right for o in mine), "of": len(mine), "calls": calls, **per_kind,
                         "seconds": round(seconds, 1), "seconds_per_call": round(seconds / max(calls, 1), 1),
                         "input_tokens_per_call": round(sum(o.input_tokens for o in mine) / max(calls, 1)),
                         "output_tokens_per_call": round(sum(o.output_tokens for o in mine) / max(calls, 1))}
        m = summary[mode]
        print(f"| {mode} | {m['right']}/{m['of']} ({100 * m['right'] / max(m['of'], 1):.0f} %) | {m['observe']} | "
              f"{m['act']} | {m['extract']} | {calls} | {m['seconds_per_call']} | {m['input_tokens_per_call']} | "
              f"{m['output_tokens_per_call']} |")
    summary["outcomes"] = [asdict(o) for o in outcomes]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
