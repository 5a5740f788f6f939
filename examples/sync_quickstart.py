"""The quickstart with the sync API: no ``async``/``await``, same methods and results.

    python examples/sync_quickstart.py

``stagehand_py.sync_api.Stagehand`` wraps a *sync* Playwright page: ``Stagehand(page)`` for
a page you made (pytest-playwright's ``page`` fixture included), or ``Stagehand.launch()``.
Use it where no asyncio loop runs (a script, a notebook cell without top-level await, a
plain ``def`` test); inside ``async def`` code use ``stagehand_py.Stagehand``.
"""

from __future__ import annotations

import sys
from typing import Any

from _local_site import serve_site
from _model_config import HOW_TO_CONFIGURE, pick_model
from quickstart import abridged, find_id

from stagehand_py import Action
from stagehand_py.sync_api import Stagehand


def main(model: Any = None, *, headless: bool = True) -> int:
    picked = pick_model(model)
    options, label = picked if picked is not None else ({}, "")
    with serve_site() as site, Stagehand.launch(headless=headless, **options) as stagehand:
        page = stagehand.page  # a sync Playwright Page
        page.goto(site.url("login.html"))

        snapshot = stagehand.snapshot()
        print(abridged(snapshot.tree))
        username = find_id(snapshot, "textbox", "Username")
        stagehand.act(Action(selector="xpath=" + snapshot.xpath_map[username], method="fill", arguments=["ada"]))
        page.click("button[type=submit]")  # plain Playwright calls mix freely with Stagehand's
        print(f"page says: {page.inner_text('#status')}")

        if picked is None:
            print(HOW_TO_CONFIGURE)
            return 0
        print(f"model: {label}")
        for action in stagehand.observe("the links to other pages"):
            print(f"observe -> {action.method} {action.description}")
        result = stagehand.act("open the Products page")
        print(f"act -> success={result.success}; now at {page.url}")
        print(f"extract -> {stagehand.extract('the page heading')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
