from __future__ import annotations

import re

import pytest_asyncio

from stagehand_py import Stagehand


def normalize_ids(tree: str) -> str:
    """Backend ids depend on the renderer's history; frame ordinals and structure do not."""
    return re.sub(r"\[(\d+)-\d+\]", r"[\1-#]", tree)


@pytest_asyncio.fixture(loop_scope="session")
async def sh(page):
    """A Stagehand over the test's own page (the Playwright relay transport)."""
    stagehand = Stagehand(page)
    yield stagehand
    await stagehand.close()


async def load(page, url: str) -> None:
    await page.goto(url)
    await page.wait_for_load_state("networkidle")
    for frame in page.frames:
        await frame.wait_for_load_state()
