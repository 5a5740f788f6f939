"""Quickstart: the first thing to run after installing stagehand_py.

    python examples/quickstart.py              # a browser Stagehand.launch() starts
    python examples/quickstart.py --wrapped    # a page you launched with Playwright, wrapped: Stagehand(page)

It serves a tiny local site (examples/site/), launches a headless Chromium and:

1. prints the page's snapshot outline (abridged) and the ids / XPaths of a few elements;
2. fills the username field and clicks "Sign in" with hand-built ``Action`` values (no model);
3. with a model — a hosted one when a key is set, else the embedded local model that
   ``bash scripts/setup.sh`` (or ``stagehand-py model fetch``) installs (see examples/_model_config.py)
   — runs the main job: ``observe`` the sign-in form with ``%username%``/``%password%`` placeholders,
   check the proposed actions, ``act`` them (values filled in only then), ``act`` on an instruction,
   and ``extract`` the product list into a pydantic model, printing seconds and tokens per model call.
   The embedded model loads in the background from the moment the Stagehand starts; its load time is
   printed apart from the calls, with what became of the fixed prompt's cache (saved beside the model
   by the first run, restored by the next). With no model at all it prints how to configure one and
   exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil
import sys
import time
from collections.abc import AsyncIterator, Awaitable
from typing import Any, Literal, TypeVar

from _local_site import serve_site
from _model_config import HOW_TO_CONFIGURE, pick_model
from playwright.async_api import async_playwright
from pydantic import BaseModel

from stagehand_py import Action, Snapshot, Stagehand, Variables, placeholders_in
from stagehand_py.llm import ModelLoad

OUTLINE_LINES = 12  # how much of the outline to print
T = TypeVar("T")


def abridged(outline: str, lines: int = OUTLINE_LINES) -> str:
    """The first ``lines`` lines of an outline, and a note of how many were left out."""
    all_lines = outline.split("\n")
    shown = "\n".join(all_lines[:lines])
    rest = len(all_lines) - lines
    return shown + (f"\n  ... ({rest} more lines)" if rest > 0 else "")


def find_id(snapshot: Snapshot, role: str, name: str) -> str:
    """The id of the first outline line ``[id] role: name`` (an example helper, not the API)."""
    line = re.compile(rf"^\s*\[(\d+-\d+)\] {re.escape(role)}: {re.escape(name)}$", re.MULTILINE)
    match = line.search(snapshot.tree)
    if match is None:
        raise LookupError(f"no '{role}: {name}' line in the outline of {snapshot.url}")
    return match.group(1)


class Product(BaseModel):
    name: str
    price: str


class Products(BaseModel):
    products: list[Product]


#: What became of the fixed prompt every verb starts with (see ModelLoad.prompt_cache).
PROMPT_CACHE = {
    "restored": "restored from the cache an earlier run saved beside the model",
    "computing": "no saved cache yet: the first call waits for it, and it is saved for the next run",
    "saved": "computed and saved beside the model for the next run",
    "computed": "computed (not saved: the folder beside the model is not writable)",
    "off": "not cached",
}


def describe_load(load: ModelLoad) -> str:
    """The model's load, in one line, apart from the calls' times."""
    if load.seconds == 0 and load.prompt_cache == "off":
        return "ready at once"
    tokens = f" ({load.cached_tokens} tokens)" if load.cached_tokens else ""
    return f"loaded in {load.seconds:.1f} s; the fixed prompt{tokens}: {PROMPT_CACHE[load.prompt_cache]}"


def check_plan(plan: list[Action]) -> list[str]:
    """What is wrong with a proposed sign-in plan (empty: run it)."""
    if not plan:
        return ["the model proposed no action"]
    problems = []
    for action in plan:
        if action.method not in ("fill", "type", "click"):
            problems.append(f"unexpected method {action.method!r}")
        if action.method in ("fill", "type") and not placeholders_in(action.arguments):
            problems.append(f"{action.description!r} would get literal text instead of a placeholder")
        if not action.selector.startswith("xpath=/html[1]/body[1]/main[1]/form[1]/"):
            problems.append(f"{action.description!r} is outside the sign-in form")
    if not {"username", "password"} <= {name for a in plan for name in placeholders_in(a.arguments)}:
        problems.append("the plan does not fill both the username and the password")
    return problems


@contextlib.asynccontextmanager
async def open_stagehand(kind: Literal["launched", "wrapped"], *, headless: bool,
                         options: dict[str, Any]) -> AsyncIterator[Stagehand]:
    """A Stagehand on a browser it launches, or on a page of a browser you launched yourself."""
    if kind == "launched":
        async with await Stagehand.launch(headless=headless, **options) as stagehand:
            yield stagehand
        return
    async with async_playwright() as playwright:
        # Your own launch (here the system Chromium when there is one; --no-sandbox for root in a container).
        browser = await playwright.chromium.launch(headless=headless, executable_path=shutil.which("chromium"),
                                                   args=["--no-sandbox"])
        try:
            async with Stagehand(await browser.new_page(), **options) as stagehand:
                yield stagehand
        finally:
            await browser.close()


async def main(model: Any = None, *, headless: bool = True, kind: Literal["launched", "wrapped"] = "launched") -> int:
    """Run the quickstart; ``model`` (anything ``Stagehand(model=...)`` takes) overrides the
    one the environment configures; ``kind``: on a browser Stagehand launches, or on your own page."""
    picked = pick_model(model)
    options, model_label = picked if picked is not None else ({}, "")
    with serve_site() as site:
        async with open_stagehand(kind, headless=headless, options=options) as stagehand:
            page = stagehand.page
            await page.goto(site.url("login.html"))

            # 1. What a model would see: an outline with an id per element, and maps back to the page.
            snapshot = await stagehand.snapshot()
            print(f"Snapshot of {snapshot.url}: {len(snapshot.ids)} elements, ~{snapshot.tokens} tokens")
            print(abridged(snapshot.tree))
            print()
            elements = {
                "username": find_id(snapshot, "textbox", "Username"),
                "password": find_id(snapshot, "textbox", "Password"),
                "sign_in": find_id(snapshot, "button", "Sign in"),
            }
            for label, element_id in elements.items():
                print(f"{label:>9}: id {element_id:<6} xpath {snapshot.xpath_map[element_id]}")
            print()

            # 2. Acting needs no model when you already know the action.
            fill = Action(
                selector="xpath=" + snapshot.xpath_map[elements["username"]],
                description="the username field",
                method="fill",
                arguments=["ada"],
            )
            click = Action(selector="xpath=" + snapshot.xpath_map[elements["sign_in"]], description="the Sign in button")
            for action in (fill, click):
                result = await stagehand.act(action)
                print(f"did: {action.method} on {action.description} (success={result.success})")
            print(f"page says: {await page.inner_text('#status')}")
            print()

            # 3. The model-driven verbs.
            if picked is None:
                print(HOW_TO_CONFIGURE)
                return 0
            print(f"model: {model_label}; page: {kind}")
            # A local model has been loading since the Stagehand started: wait for it here, so that
            # the calls below are timed without it.
            print(f"  [model: {describe_load(await stagehand.model_ready())}]")
            await page.reload()
            seconds: dict[str, float] = {}

            async def timed(what: str, call: Awaitable[T]) -> T:
                """Run one verb and print its seconds and the tokens its model calls used."""
                before, started = stagehand.metrics.total, time.perf_counter()
                result = await call
                used = stagehand.metrics.total
                seconds[what] = time.perf_counter() - started
                print(f"  [{what}: {seconds[what]:.1f} s, {used.requests - before.requests} model "
                      f"call(s), {used.input_tokens - before.input_tokens} tokens in "
                      f"({used.cached_tokens - before.cached_tokens} from the prompt cache), "
                      f"{used.output_tokens - before.output_tokens} out]")
                return result

            # observe: the model plans with placeholders; it never sees the values.
            variables: Variables = {
                "username": "ada",
                "password": {"value": "correct horse", "description": "the account password"},
            }
            plan = await timed("observe", stagehand.observe(
                "fill in the sign-in form with the username and the password", variables=variables))
            for action in plan:
                print(f"observe -> {action.method} {action.arguments} on {action.description}")
            # Validate, then act: only fills of our placeholders (and clicks) inside the form.
            problems = check_plan(plan)
            if problems:
                print(f"not acting on this plan: {'; '.join(problems)}")
            else:
                for action in plan:
                    await stagehand.act(action, variables=variables)  # no model call: values go in here
                print(f"acted on {len(plan)} action(s); username field now holds {await page.input_value('#username')!r}")
            # act: plan one action from an instruction and do it.
            result = await timed("act", stagehand.act("tick the Remember me checkbox"))
            print(f"act -> success={result.success}: {result.message}")
            print(f"checkbox now checked: {await page.is_checked('#remember')}")
            # extract: structured data, validated against a pydantic model.
            await page.goto(site.url("products.html"))
            catalog = await timed("extract", stagehand.extract("every product with its price", schema=Products))
            for product in catalog.products:
                print(f"extract -> {product.name}: {product.price}")
            usage = stagehand.metrics.total
            print(f"model calls: {usage.requests}, tokens in/out: {usage.input_tokens}/{usage.output_tokens}")
            print(f"act/observe: {seconds['act'] / seconds['observe']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(kind="wrapped" if "--wrapped" in sys.argv[1:] else "launched")))
