"""Quickstart: the first thing to run after installing stagehand_py.

    python examples/quickstart.py

It serves a tiny local site (examples/site/), launches a headless Chromium and:

1. prints the page's snapshot outline (abridged) and the ids / XPaths of a few elements;
2. fills the username field and clicks "Sign in" with hand-built ``Action`` values (no model);
3. with a model — a hosted one when a key is set, else the embedded local model that
   ``bash scripts/setup.sh`` installs (see examples/_model_config.py) — runs the main job:
   ``observe`` the sign-in form with ``%username%``/``%password%`` placeholders, check the proposed
   actions, ``act`` them (values filled in only then), ``act`` on an instruction, and ``extract``
   the product list into a pydantic model, printing seconds and tokens per model call. With no model
   at all it prints how to configure one and exits 0.
"""

from __future__ import annotations

import asyncio
import re
import sys
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

from _local_site import serve_site
from _model_config import HOW_TO_CONFIGURE, pick_model
from pydantic import BaseModel

from stagehand_py import Action, Snapshot, Stagehand, Variables, placeholders_in

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


async def main(model: Any = None, *, headless: bool = True) -> int:
    """Run the quickstart; ``model`` (anything ``Stagehand(model=...)`` takes) overrides the
    one the environment configures."""
    picked = pick_model(model)
    options, model_label = picked if picked is not None else ({}, "")
    with serve_site() as site:
        async with await Stagehand.launch(headless=headless, **options) as stagehand:
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
            print(f"model: {model_label}")
            await page.reload()

            async def timed(what: str, call: Awaitable[T]) -> T:
                """Run one verb and print its seconds and the tokens its model calls used."""
                before, started = stagehand.metrics.total, time.perf_counter()
                result = await call
                used = stagehand.metrics.total
                print(f"  [{what}: {time.perf_counter() - started:.1f} s, {used.requests - before.requests} model "
                      f"call(s), {used.input_tokens - before.input_tokens} tokens in, "
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
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
