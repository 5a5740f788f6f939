from __future__ import annotations

import re

import pytest
import pytest_asyncio

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
async def sh(snapshot_path, context, pw):
    # A fresh page per test either way: frame ordinals are kept for a page's lifetime. A launched
    # Stagehand starts its own Chromium with the session's Playwright driver (not a Node process per test).
    stagehand = (await Stagehand.launch(_playwright=pw) if snapshot_path == "launched"
                 else Stagehand(await context.new_page()))
    yield stagehand
    await stagehand.close()


@pytest.fixture
def page(sh):
    """The page the test's Stagehand works on, whichever path built it."""
    return sh.page


async def load(page, url: str) -> None:
    await page.goto(url)
    await page.wait_for_load_state("networkidle")
    for frame in page.frames:
        await frame.wait_for_load_state()


async def backend_ids(sh: Stagehand, snapshot) -> dict[str, int | None]:
    """Chrome's backend node id behind each of the snapshot's ids (for the XPath oracle)."""
    from stagehand_py.snapshot._capture import element_backend_ids

    session = sh._driven()  # the tab's private session: its CDP targets and frame ordinals
    return await element_backend_ids(await session.targets(), session.ordinals, list(snapshot.xpath_map))
