"""The sync Chromium behind ``stagehand_sync``, and when it must step aside for async tests.

Sync Playwright runs its asyncio loop in this thread and marks it running between calls, so while
it lives pytest-asyncio cannot run a loop of its own here: an async test after a sync one failed
with "Runner.run() cannot be called from a running event loop", and so did the session's async
fixtures ending after a sync test. The browser is therefore kept from one sync test to the next
and stopped after a sync test that an async one follows, or that is the last (started again by
the next sync test); before an async test too, and at the end of the session, in case.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

__all__ = ["SYNC_CHROMIUM", "SyncChromium", "runs_on_a_loop"]


class SyncChromium:
    """A headless Chromium on sync Playwright, started on first use."""

    def __init__(self) -> None:
        self._playwright: Any = None
        self._browser: Any = None
        #: Set as each test ends: stop once this test's fixtures are done (an async test, or none, is next).
        self.stop_after = False

    def browser(self) -> Any:
        if self._browser is None:
            from playwright.sync_api import sync_playwright

            from ..browser._chromium import DEFAULT_CHROMIUM_ARGS, find_chromium

            playwright = sync_playwright().start()
            try:
                try:
                    bundled = playwright.chromium.executable_path
                except Exception:  # no Playwright browser installed: the system one is fine
                    bundled = None
                self._browser = playwright.chromium.launch(
                    executable_path=find_chromium(None, playwright_path=bundled), headless=True,
                    args=list(DEFAULT_CHROMIUM_ARGS))
            except BaseException:
                playwright.stop()
                raise
            self._playwright = playwright
        return self._browser

    def stop(self) -> None:
        browser, playwright = self._browser, self._playwright
        self._browser = self._playwright = None
        try:
            if browser is not None:
                browser.close()
        finally:
            if playwright is not None:
                playwright.stop()


SYNC_CHROMIUM = pytest.StashKey[SyncChromium]()


def runs_on_a_loop(item: pytest.Item) -> bool:
    """True for a test pytest-asyncio runs: a coroutine, marked ``asyncio`` (auto mode marks them
    all), or one using the async ``stagehand`` fixture."""
    names = getattr(item, "fixturenames", ())
    return (item.get_closest_marker("asyncio") is not None or inspect.iscoroutinefunction(getattr(item, "obj", None))
            or "stagehand" in names)
