"""How long the embedded model makes a user wait, call by call, with the prompt layout for reuse on and off.

    python benchmarks/local_model_speed.py                       # both flows, both page kinds, both layouts
    python benchmarks/local_model_speed.py --kinds launched --layouts on

Two flows, each on both page kinds (a page the user launched and wrapped with
``Stagehand(page)``, and one ``Stagehand.launch()`` started), with one loaded model shared by all:

- ``quickstart``: what examples/quickstart.py asks the model on examples/site: observe the sign-in
  form with placeholders, act on the plan (no model), act "tick the Remember me checkbox", then
  extract the product list;
- ``validate-act``: ten calls on tests/assets/forms.html, five times an ``observe`` of an element
  (what a script checks before acting) followed by the ``act`` that uses it on the same page.

Layouts: ``on`` is the library's layout (one preamble for every verb, the page's outline next,
then what the call asks; one fence per page), ``off`` puts the task first and draws a fresh fence
per request (what a prompt laid out without the cache in mind costs). The system prompt is the
same in both. Each call prints its prompt tokens, the part llama.cpp took from its cache, the
model's seconds and the verb's seconds; a table compares the layouts. On shared cores the seconds
depend on the neighbours: compare the layouts within one run (the load average is printed).
Writes .bench/local_model_speed.json.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _browser import launch_chromium
from _local_bench import add_model_options, finish, markdown_table, open_model, stagehand_for
from _local_site import serve_site
from _server import StaticServer
from playwright.async_api import async_playwright

from stagehand_py import Stagehand, StagehandError, Variables, placeholders_in
from stagehand_py._prompts.common import set_reuse_layout
from stagehand_py.llm import LLMClient

T = TypeVar("T")


class Product(BaseModel):
    name: str
    price: str


class Products(BaseModel):
    products: list[Product]


#: (what to observe, the act that follows it) on tests/assets/forms.html; the page changes only
#: by the acts themselves, and the last one submits the form.
VALIDATE_THEN_ACT = [
    ("the Remember me checkbox", "tick the Remember me checkbox"),
    ("the Pro plan radio button", "choose the Pro plan"),
    ("the country select", "select Germany as the country"),
    ("the username field", "fill the username field with ada"),
    ("the Sign in button", "click the Sign in button"),
]


@dataclass
class Call:
    flow: str
    kind: str
    layout: str
    n: int
    verb: str
    instruction: str
    prompt_tokens: int
    cached_tokens: int
    model_calls: int
    model_s: float
    verb_s: float
    ok: bool


class Recorder:
    def __init__(self, flow: str, kind: str, layout: str, stagehand: Stagehand) -> None:
        self.flow, self.kind, self.layout, self.stagehand = flow, kind, layout, stagehand
        self.calls: list[Call] = []

    async def timed(self, verb: str, instruction: str, call: Awaitable[T], ok: Callable[[T], bool]) -> T | None:
        before, started = self.stagehand.metrics.total, time.perf_counter()
        result: T | None = None
        try:
            result = await call
        except StagehandError as exc:  # a wrong answer the library refused: counted, and the flow goes on
            print(f"  {verb} {instruction!r} raised {type(exc).__name__}: {str(exc)[:160]}", flush=True)
        used = self.stagehand.metrics.total - before
        row = Call(self.flow, self.kind, self.layout, len(self.calls) + 1, verb, instruction, used.input_tokens,
                   used.cached_tokens, used.requests, used.wall_ms / 1000, time.perf_counter() - started,
                   result is not None and ok(result))
        self.calls.append(row)
        print(f"{row.flow:12} {row.kind:8} {row.layout:3} #{row.n:<2} {verb:8} {row.prompt_tokens:5} tok "
              f"{row.cached_tokens:5} cached {row.model_calls} call(s) {row.model_s:6.1f} s model "
              f"{row.verb_s:6.1f} s verb  {'ok' if row.ok else 'WRONG'}  {instruction}", flush=True)
        return result


async def quickstart(rec: Recorder, site: Any) -> None:
    sh = rec.stagehand
    await sh.page.goto(site.url("login.html"))
    variables: Variables = {"username": "ada", "password": {"value": "correct horse", "description": "the account password"}}
    plan = await rec.timed("observe", "fill in the sign-in form", sh.observe(
        "fill in the sign-in form with the username and the password", variables=variables),
        # Right as examples/quickstart.py judges a plan: both placeholders typed in (fill or type).
        lambda actions: {"username", "password"} <= {name for a in actions if a.method in ("fill", "type")
                                                     for name in placeholders_in(a.arguments)})
    for action in plan or []:
        if action.method in ("fill", "type"):
            await sh.act(action, variables=variables)  # no model call
    await rec.timed("act", "tick the Remember me checkbox", sh.act("tick the Remember me checkbox"),
                    lambda result: result.success)
    await sh.page.goto(site.url("products.html"))
    await rec.timed("extract", "every product with its price",
                    sh.extract("every product with its price", schema=Products),
                    lambda data: len(data.products) >= 3)


async def validate_then_act(rec: Recorder, server: StaticServer, pairs: int) -> None:
    sh = rec.stagehand
    await sh.page.goto(server.url("forms.html"))
    for look_for, do in VALIDATE_THEN_ACT[:pairs]:
        await rec.timed("observe", look_for, sh.observe(look_for, vision=False), bool)
        await rec.timed("act", do, sh.act(do, vision=False), lambda result: result.success)


def table(calls: list[Call]) -> str:
    """Per call, the layouts side by side; then totals per flow."""
    keyed = {(c.flow, c.kind, c.n, c.layout): c for c in calls}
    rows = sorted({(c.flow, c.kind, c.n) for c in calls})
    per_call: list[list[object]] = []
    for flow, kind, n in rows:
        on, off = keyed.get((flow, kind, n, "on")), keyed.get((flow, kind, n, "off"))
        first = on or off
        assert first is not None

        def cell(c: Call | None, what: str) -> str:
            if c is None:
                return "-"
            return f"{c.cached_tokens}" if what == "cached" else f"{c.model_s:.1f}"

        right = "/".join("-" if c is None else ("yes" if c.ok else "no") for c in (on, off))
        per_call.append([flow, kind, n, first.verb, first.prompt_tokens, cell(on, "cached"), cell(on, "s"),
                         cell(off, "cached"), cell(off, "s"), right])
    totals: list[list[object]] = []
    for flow, kind, layout in sorted({(c.flow, c.kind, c.layout) for c in calls}):
        group = [c for c in calls if (c.flow, c.kind, c.layout) == (flow, kind, layout)]
        later = [c.model_s for c in group[1:]]
        totals.append([flow, kind, layout, len(group), sum(c.prompt_tokens for c in group),
                       sum(c.cached_tokens for c in group), f"{sum(c.model_s for c in group):.1f}",
                       f"{sum(c.verb_s for c in group):.1f}", f"{group[0].model_s:.1f}",
                       f"{(sum(later) / len(later)) if later else 0:.1f}"])
    return (markdown_table(["flow", "page", "#", "verb", "prompt tok", "cached (on)", "model s (on)", "cached (off)",
                            "model s (off)", "right (on/off)"], per_call) + "\n\n"
            + markdown_table(["flow", "page", "layout", "calls", "prompt tok", "cached", "model s", "verb s",
                              "first call s", "later calls s (mean)"], totals))


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kinds", nargs="+", default=["wrapped", "launched"], choices=["wrapped", "launched"])
    parser.add_argument("--layouts", nargs="+", default=["off", "on"], choices=["on", "off"])
    parser.add_argument("--flows", nargs="+", default=["quickstart", "validate-act"], choices=["quickstart", "validate-act"])
    parser.add_argument("--pairs", type=int, default=len(VALIDATE_THEN_ACT),
                        help="observe-then-act pairs of the validate-act flow (default all five: ten calls)")
    add_model_options(parser)
    parser.add_argument("--out", type=Path, default=ROOT / ".bench" / "local_model_speed.json")
    args = parser.parse_args(argv)
    path, model = open_model(args)
    client = LLMClient(model)
    server = StaticServer().start()
    calls: list[Call] = []
    try:
        async with async_playwright() as pw:
            browser = await launch_chromium(pw)
            with serve_site() as site:
                for kind in args.kinds:
                    for layout in args.layouts:
                        set_reuse_layout(layout == "on")
                        for flow in args.flows:
                            sh = await stagehand_for(kind, browser, client, args.token_budget)
                            rec = Recorder(flow, kind, layout, sh)
                            try:
                                await (quickstart(rec, site) if flow == "quickstart" else validate_then_act(rec, server, args.pairs))
                            finally:
                                calls += rec.calls
                                await sh.close()
            await browser.close()
    finally:
        set_reuse_layout(True)
        server.stop()
        await model.aclose()
    finish(table(calls), args.out, {"model": str(path), "calls": [asdict(c) for c in calls]})
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
