"""How tests and benchmarks launch Debian's Chromium (Playwright's download is unavailable here)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from stagehand_py import Stagehand
from stagehand_py.browser._chromium import DEFAULT_CHROMIUM_ARGS
from stagehand_py.browser._session import BrowserSession

CHROMIUM_EXECUTABLE = "/usr/bin/chromium"

# The library's own flags for a headless session (one list for the project), plus QUIC off:
# this network refuses UDP to the outside.
CHROMIUM_ARGS = [*DEFAULT_CHROMIUM_ARGS, "--disable-quic"]


async def launch_chromium(playwright, **kwargs):
    """``playwright.chromium.launch`` with the flags above; extra kwargs pass through."""
    kwargs.setdefault("headless", True)
    return await playwright.chromium.launch(
        executable_path=CHROMIUM_EXECUTABLE, args=list(CHROMIUM_ARGS), **kwargs
    )


@contextlib.asynccontextmanager
async def stagehand_beside(launched: Stagehand, **options: Any) -> AsyncIterator[Stagehand]:
    """A Stagehand on a fresh page of the browser ``launched`` (a ``Stagehand.launch()``) runs:
    a context of its own (launch()'s viewport), the launched session's direct CDP connection, and
    the helpers launch() installs before the first navigation. A Chromium launched per test costs
    seconds on loaded cores; a context of its own isolates the test as well (cookies, cache,
    workers, frame ordinals)."""
    own = await launched.page.context.browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = await own.new_page()
        stagehand = Stagehand(page, _session=BrowserSession(page=page, direct=launched._session.direct), **options)
        own_close = stagehand.close

        async def close() -> None:  # a test may close it itself (to write its trace): never the shared connection
            stagehand._session.direct = None  # the launched Stagehand's: it closes it
            await own_close()

        stagehand.close = close  # type: ignore[method-assign]
        try:
            await stagehand._install_helpers()  # what launch() does before the first navigation
            yield stagehand
        finally:
            await stagehand.close()
    finally:
        await own.close()


async def new_stagehand_of_kind(made: contextlib.AsyncExitStack, kind: str, context: Any, launched: Stagehand,
                                **options: Any) -> Stagehand:
    """A Stagehand on a fresh page, closed when ``made`` closes: for ``kind`` "launched" one beside
    ``launched`` (:func:`stagehand_beside`), else a new page of ``context`` wrapped (the user's)."""
    if kind == "launched":
        return await made.enter_async_context(stagehand_beside(launched, **options))
    stagehand = Stagehand(await context.new_page(), **options)
    made.push_async_callback(stagehand.close)
    return stagehand
