"""Agent tests that run on both page kinds a user has: a page the user launched and wrapped
(``Stagehand(page)``) and one in the browser ``Stagehand.launch()`` started (a context of its own
in the session's launched Chromium, ``_browser.stagehand_beside``).

* ``page_kind``       "wrapped" or "launched" (parametrised).
* ``new_stagehand``   ``await new_stagehand(**options)``: a Stagehand of that kind on a fresh page,
                      closed after the test.
"""

from __future__ import annotations

import contextlib

import pytest
import pytest_asyncio
from _browser import new_stagehand_of_kind


@pytest.fixture(params=["wrapped", "launched"])
def page_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest_asyncio.fixture(loop_scope="session")
async def new_stagehand(page_kind, context, launched_stagehand):
    async with contextlib.AsyncExitStack() as made:
        yield lambda **options: new_stagehand_of_kind(made, page_kind, context, launched_stagehand, **options)
