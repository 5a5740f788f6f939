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

from _local_site import serve_site
from _model_config import HOW_TO_CONFIGURE, ModelChoice, model_from_env

from stagehand_py import Action, Snapshot, Stagehand
from stagehand_py.actions import execute_action

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


async def main(model: ModelChoice | None = None, *, headless: bool = True) -> int:
    """Run the quickstart; ``model`` overrides the one the environment configures."""
    with serve_site() as site:
        async with await Stagehand.launch(headless=headless) as stagehand:
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
                await execute_action(page, action)
                print(f"did: {action.method} on {action.description}")
            print(f"page says: {await page.inner_text('#status')}")
            print()

            # 3. The model-driven verbs.
            chosen = model if model is not None else model_from_env()
            if chosen is None:
                print(HOW_TO_CONFIGURE)
                return 0
            print(f"model: {chosen.model} (from {chosen.source})")
            print("observe / act / extract are not in this build yet; the snapshot and Action parts above are.")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
