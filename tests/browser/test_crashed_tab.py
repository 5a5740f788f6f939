"""A tab whose renderer crashed: closing its Stagehand returns. A crashed renderer never answers
the CDP detach, and the crash event can arrive while that detach is in flight (close waited forever)."""

from __future__ import annotations

import asyncio

import pytest

#: Not a speed bound: close() returns in milliseconds; this only turns the old hang into a failure.
HANG = 300.0


async def test_closing_the_stagehand_of_a_crashed_tab_returns(new_stagehand) -> None:
    sh = await new_stagehand()
    await sh.page.set_content("<button>Go</button>")
    await sh.snapshot()  # the tab's CDP sessions are open: close() has something to detach
    crashed = asyncio.get_running_loop().create_future()
    sh.page.once("crash", lambda _page: crashed.set_result(True))
    with pytest.raises(Exception):  # noqa: B017 - Playwright's plain Error: the navigation crashed the renderer
        await sh.page.goto("chrome://crash")
    await asyncio.wait_for(sh.close(), HANG)  # at once, as a user's script does after the error
    assert await asyncio.wait_for(crashed, HANG)  # control: the renderer really crashed
