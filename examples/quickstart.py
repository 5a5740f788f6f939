"""Quickstart: the first thing to run after installing stagehand_py.

    python examples/quickstart.py

It serves a tiny local site (examples/site/), launches a headless Chromium and:

1. prints the page's snapshot outline (abridged) and the ids / XPaths of a few elements;
2. fills the username field and clicks "Sign in" with hand-built ``Action`` values (no model);
3. when a model is configured (see examples/_model_config.py), runs observe, act and extract
   with it; with none, prints how to configure one and exits 0.
"""

from __future__ import annotations

import asyncio
import re
import sys
from typing import Any

from _local_site import serve_site
from _model_config import HOW_TO_CONFIGURE, pick_model
from pydantic import BaseModel

from stagehand_py import Action, Snapshot, Stagehand

OUTLINE_LINES = 12  # how much of the outline to print


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
            # observe: find elements and the action for each, without doing anything yet.
            for action in await stagehand.observe("the Remember me checkbox"):
                print(f"observe -> {action.method} {action.selector}  ({action.description})")
            # act: plan one action from an instruction and do it.
            result = await stagehand.act("tick the Remember me checkbox")
            print(f"act -> success={result.success}: {result.message}")
            print(f"checkbox now checked: {await page.is_checked('#remember')}")
            # extract: structured data, validated against a pydantic model.
            await page.goto(site.url("products.html"))
            catalog = await stagehand.extract("every product with its price", schema=Products)
            for product in catalog.products:
                print(f"extract -> {product.name}: {product.price}")
            usage = stagehand.metrics.total
            print(f"model calls: {usage.requests}, tokens in/out: {usage.input_tokens}/{usage.output_tokens}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
