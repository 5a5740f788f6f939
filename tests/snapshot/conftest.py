from __future__ import annotations

import contextlib
import re

import pytest
import pytest_asyncio
from _browser import new_stagehand_of_kind

from stagehand_py import Stagehand


def normalize_ids(tree: str) -> str:
    """Backend ids depend on the renderer's history; frame ordinals and structure do not."""
    return re.sub(r"\[(\d+)-\d+\]", r"[\1-#]", tree)


@pytest.fixture(params=["wrapped", "launched"])
def snapshot_path(request) -> str:
    """Every snapshot test runs on both paths: a page the test launched with plain Playwright
    (as a user's script or pytest-playwright's ``page``), and a page Stagehand launched."""
    return request.param


@pytest_asyncio.fixture(loop_scope="session")
async def sh(snapshot_path, context, launched_stagehand):
    # A fresh page per test either way: frame ordinals are kept for a page's lifetime. A launched
    # Stagehand's page is in a context of its own in the session's launched Chromium (its flags,
    # its init scripts, its direct CDP connection), not in a Chromium per test.
    async with contextlib.AsyncExitStack() as made:
        yield await new_stagehand_of_kind(made, snapshot_path, context, launched_stagehand)


@pytest.fixture
def page(sh):
    """The page the test's Stagehand works on, whichever path built it."""
    return sh.page


async def load(page, url: str) -> None:
    """Open ``url`` and wait for its load event and each frame's. No page these tests load
    requests anything after its load event (only dynamic.html fetches, on a click), so waiting
    for the network to stay quiet 500 ms more ("networkidle") waited for nothing."""
    await page.goto(url)
    for frame in page.frames:
        await frame.wait_for_load_state()


async def backend_ids(sh: Stagehand, snapshot) -> dict[str, int | None]:
    """Chrome's backend node id behind each of the snapshot's ids (for the XPath oracle)."""
    from stagehand_py.snapshot._capture import element_backend_ids

    session = sh._driven()  # the tab's private session: its CDP targets and frame ordinals
    return await element_backend_ids(await session.targets(), session.ordinals, list(snapshot.xpath_map))
