"""Both ways a Stagehand gets its page: one the user launched (``Stagehand(page=page)``) and one
Stagehand launched itself. Tests that take ``make_stagehand`` run on both.

A launched Stagehand starts its own Chromium (its flags, its init scripts, its direct CDP
connection) with the session's Playwright driver (``_playwright``, as the sync API does): starting
a Playwright driver per test is a Node process per test, which nothing here is about."""

from __future__ import annotations

import contextlib

import pytest
import pytest_asyncio
from _browser import new_stagehand_of_kind

from stagehand_py import Stagehand


@pytest.fixture(params=["wrapped", "launched"])
def page_path(request) -> str:
    return request.param


@pytest_asyncio.fixture(loop_scope="session")
async def make_stagehand(page_path, context, pw):
    """``await make_stagehand(**options)``: a Stagehand on a fresh page, by ``page_path``; all
    are closed after the test."""
    made: list[Stagehand] = []

    async def make(**options) -> Stagehand:
        if page_path == "launched":
            stagehand = await Stagehand.launch(_playwright=pw, **options)
        else:
            stagehand = Stagehand(await context.new_page(), **options)
        made.append(stagehand)
        return stagehand

    yield make
    for stagehand in made:
        await stagehand.close()


@pytest_asyncio.fixture(loop_scope="session")
async def make_stagehand_beside(page_path, context, launched_stagehand):
    """``make_stagehand``, but a launched Stagehand's page is a context of its own in the session's
    launched Chromium (``_browser.stagehand_beside``), not a Chromium of its own: for tests that are
    not about launching."""
    async with contextlib.AsyncExitStack() as made:
        yield lambda **options: new_stagehand_of_kind(made, page_path, context, launched_stagehand, **options)
