"""Acts on big pages with the embedded model: the Django admin and the Python docs search.

    python benchmarks/local_big_page_acts.py                        # both page kinds, all 10 acts
    python benchmarks/local_big_page_acts.py --kinds launched --only "not in stock"
    python benchmarks/local_big_page_acts.py --dry-run --show-prompt --only "docs search box"   # no model

Ten acts, each judged from outside by the page's state after it (never by the act's own
``success``), on both page kinds (a page the user launched and wrapped with ``Stagehand(page)``,
and one ``Stagehand.launch()`` started), with one loaded model shared by all:

- the Django admin book list (200 books, 100 a page, filters by genre, stock and date: an
  outline of about 18,000 tokens): type into the search box, press Search, the "No" filter under
  "By in stock", the Poetry filter, page 2;
- a book's change form: fill the title, choose a genre, Save;
- the Python docs' ``library/json.html`` (about 19,500 tokens, two "Quick search" forms): type
  into the search box, press Go.

Each act starts from its own page state (a fresh load, and for the second act of a form the
value the first one should have typed, typed by Playwright), so one miss does not decide the
next. The admin runs on a fresh database per run (a temporary sqlite file). Prints one line per
act (right or wrong, the act's own success, model calls, prompt tokens, cached tokens, seconds,
and the action it ran: method, arguments, element) and a table per page kind; writes
.bench/local_big_page_acts.json. ``--show-prompt`` prints what each request asks after the page's
outline (the task, the instruction and the choices, each with its section); ``--dry-run`` loads no
model: a scripted one answers "no element fits", so the prompts can be read in seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks"), str(ROOT / "benchmarks" / "django_site")]

import serve  # benchmarks/django_site/serve.py
from _browser import launch_chromium
from _local_bench import append_run, load, model_path, stagehand_for
from _server import StaticServer
from playwright.async_api import Page, async_playwright

from stagehand_py import Stagehand, StagehandError
from stagehand_py._prompts.choice import NO_CHOICE
from stagehand_py.llm import LLMClient, LLMRequest, LocalModel
from stagehand_py.llm._messages import message_text
from stagehand_py.testing import FunctionLLM, capture_requests

DOCS = [Path("/usr/share/doc/python3-doc/html"), *Path("/usr/share/doc").glob("python3*/html")]


@dataclass(frozen=True)
class BigAct:
    name: str
    #: "changelist", "change" (a book's change form) or "docs" (library/json.html).
    page: str
    instruction: str
    #: A JS expression true once the act did what it says (evaluated on the page after the act).
    done: str
    #: Playwright steps before the act: (selector, value) pairs filled in, page state an earlier act makes.
    before: tuple[tuple[str, str], ...] = ()


ACTS = [
    BigAct("search box", "changelist", "type Lovelace into the search box",
           "document.querySelector('#searchbar').value === 'Lovelace'"),
    BigAct("search button", "changelist", "click the Search button",
           "new URLSearchParams(location.search).get('q') === 'Lovelace'", before=(("#searchbar", "Lovelace"),)),
    BigAct("not in stock", "changelist", "Filter the list to books that are not in stock",
           "new URLSearchParams(location.search).get('in_stock__exact') === '0'"),
    BigAct("poetry filter", "changelist", "show only the Poetry books",
           "new URLSearchParams(location.search).get('genre__exact') === 'poetry'"),
    BigAct("page 2", "changelist", "go to page 2 of the book list",
           "document.querySelector('.paginator .this-page')?.textContent.trim() === '2'"),
    BigAct("title field", "change", "fill the Title field with Dune",
           "document.querySelector('#id_title').value === 'Dune'"),
    BigAct("genre select", "change", "set the Genre to Poetry",
           "document.querySelector('#id_genre').value === 'poetry'", before=(("#id_title", "Dune"),)),
    BigAct("save", "change", "click the Save button",
           "location.pathname.endsWith('/admin/books/book/') && "
           "(document.querySelector('.messagelist')?.textContent || '').includes('was changed successfully')",
           before=(("#id_title", "Dune"),)),
    BigAct("docs search box", "docs", "type dumps into the Quick search box",
           "[...document.querySelectorAll('input[name=q]')].some(i => i.value === 'dumps')"),
    BigAct("docs go", "docs", "click Go to search",
           "location.pathname.endsWith('/search.html') && new URLSearchParams(location.search).get('q') === 'dumps'",
           before=(("input[name=q] >> nth=1", "dumps"), ("input[name=q] >> nth=2", "dumps"))),
]


@dataclass
class Outcome:
    kind: str
    act: str
    right: bool
    success: bool | None
    model_calls: int
    prompt_tokens: int
    cached_tokens: int
    seconds: float
    detail: str


async def prepare(page: Page, act: BigAct, urls: dict[str, str], book: int) -> None:
    url = urls[act.page].format(book=book)
    await page.goto(url)
    for selector, value in act.before:
        await page.locator(selector).fill(value)


def after_outline(request: LLMRequest) -> str:
    """The request's last user message after the page's outline (the first fenced block): what
    this act asks, with its choices."""
    text = next(message_text(m) for m in reversed(request.messages) if m.role == "user")
    end = text.find("END UNTRUSTED")
    return text[text.find("\n", end) + 1:] if end >= 0 else text


def answer_none(request: LLMRequest) -> dict[str, object]:
    """--dry-run's model: no element fits (the act ends without touching the page)."""
    return {"elements": [{"element": NO_CHOICE, "method": "click", "arguments": []}], "opens_options": False}


async def run_act(sh: Stagehand, act: BigAct, kind: str, urls: dict[str, str], book: int, *,
                  show_prompt: bool = False) -> Outcome:
    await prepare(sh.page, act, urls, book)
    before, started = sh.metrics.total, time.perf_counter()
    success: bool | None = None
    with capture_requests() as calls:
        try:
            result = await sh.act(act.instruction, vision=False)
            ran = "; ".join(f"{a.method}{a.arguments} on {a.description!r} ({a.selector})" for a in result.actions)
            success, detail = result.success, f"{result.message[:90]} | {ran or 'no action'}"
        except StagehandError as exc:
            detail = f"{type(exc).__name__}: {str(exc)[:110]}"
    seconds = time.perf_counter() - started
    for n, call in enumerate(calls if show_prompt else [], start=1):
        print(f"--- {kind} {act.name}: request {n} of {len(calls)} ({call.request.purpose}), after the outline:\n"
              f"{after_outline(call.request)}\n---", flush=True)
    used = sh.metrics.total - before
    await sh.page.wait_for_load_state()
    right = bool(await sh.page.evaluate(act.done))
    return Outcome(kind, act.name, right, success, used.requests, used.input_tokens, used.cached_tokens,
                   round(seconds, 1), detail)


def table(outcomes: list[Outcome], kinds: list[str]) -> str:
    out = ["| act | " + " | ".join(f"{k}: right, calls, prompt tok, cached, s" for k in kinds) + " |",
           "|---|" + "---|" * len(kinds)]
    for act in dict.fromkeys(o.act for o in outcomes):
        cells = []
        for kind in kinds:
            o = next((o for o in outcomes if o.act == act and o.kind == kind), None)
            cells.append("-" if o is None else f"{'yes' if o.right else 'no'}, {o.model_calls}, {o.prompt_tokens}, "
                         f"{o.cached_tokens}, {o.seconds:.0f}")
        out.append(f"| {act} | " + " | ".join(cells) + " |")
    totals = []
    for kind in kinds:
        mine = [o for o in outcomes if o.kind == kind]
        totals.append(f"**{sum(o.right for o in mine)}/{len(mine)}**, {sum(o.model_calls for o in mine)}, "
                      f"{sum(o.prompt_tokens for o in mine)}, {sum(o.cached_tokens for o in mine)}, "
                      f"{sum(o.seconds for o in mine):.0f}")
    out.append("| right of all | " + " | ".join(totals) + " |")
    return "\n".join(out)


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="a .gguf path (default: the pinned model in the models folder)")
    parser.add_argument("--kinds", nargs="+", default=["wrapped", "launched"], choices=["wrapped", "launched"])
    parser.add_argument("--only", nargs="*", default=None, help="act names to run, in this order (default: all)")
    parser.add_argument("--token-budget", type=int, default=6000)
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds a model request may take (default: the local profile's bound, which a heavily "
                             "loaded machine can exceed; a timed-out prompt is computed again)")
    parser.add_argument("--out", type=Path, default=ROOT / ".bench" / "local_big_page_acts.json")
    parser.add_argument("--show-prompt", action="store_true",
                        help="print each request's task, instruction and choices (what follows the page's outline)")
    parser.add_argument("--dry-run", action="store_true",
                        help="no model: a scripted one answers 'no element fits' (to read the prompts quickly)")
    args = parser.parse_args(argv)
    docs = next((p for p in DOCS if (p / "library/json.html").is_file()), None)
    if docs is None:
        parser.error("the Python docs are missing: apt-get install -y python3-doc")
    path = model_path(args.model)
    model = None if args.dry_run else LocalModel(path, n_ctx=args.n_ctx, timeout=args.timeout)
    client = LLMClient(FunctionLLM(answer_none), choice_mode=True) if model is None else LLMClient(model)
    by_name = {a.name: a for a in ACTS}
    unknown = [name for name in args.only or [] if name not in by_name]
    if unknown:
        parser.error(f"unknown act(s) {unknown}; the acts are {list(by_name)}")
    acts = ACTS if args.only is None else [by_name[name] for name in args.only]  # in the order given
    print(f"model {'none (dry run)' if model is None else path.name}; {load()}", flush=True)
    outcomes: list[Outcome] = []
    scratch = tempfile.TemporaryDirectory()
    os.environ["BENCH_DJANGO_DB"] = str(Path(scratch.name) / "db.sqlite3")  # a fresh admin: no earlier saves
    proc, base = serve.start()
    docs_server = StaticServer(docs).start()

    def on_sigterm(*_: object) -> None:
        # Killed: stop the servers and leave at once (releasing the model would wait for the prompt it computes).
        docs_server.stop()
        proc.terminate()
        os._exit(143)

    signal.signal(signal.SIGTERM, on_sigterm)
    urls = {"changelist": base + serve.CHANGELIST, "change": base + serve.CHANGELIST + "{book}/change/",
            "docs": docs_server.url("library/json.html")}
    try:
        async with async_playwright() as pw:
            browser = await launch_chromium(pw)
            for book, kind in enumerate(args.kinds, start=1):  # each kind edits its own book
                sh = await stagehand_for(kind, browser, client, args.token_budget)
                try:
                    await serve.login(sh.page, base)
                    for act in acts:
                        o = await run_act(sh, act, kind, urls, book, show_prompt=args.show_prompt)
                        outcomes.append(o)
                        print(f"{kind:8} {act.name:16} {'right' if o.right else 'WRONG':5} success={o.success!s:5} "
                              f"{o.model_calls} call(s) {o.prompt_tokens:5} tok {o.cached_tokens:5} cached "
                              f"{o.seconds:6.1f} s  {o.detail}", flush=True)
                finally:
                    await sh.close()
            await browser.close()
    finally:
        docs_server.stop()
        proc.terminate()
        proc.wait(10)
        scratch.cleanup()
        if model is not None:
            await model.aclose()
    print()
    print(table(outcomes, args.kinds))
    print(f"\n{load()} at the end")
    if model is not None:
        append_run(args.out, {"model": str(path), "outcomes": [asdict(o) for o in outcomes]})
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
