"""The browser a batch runs its rows in: Chromium launched here, or a remote one.

``--browser-endpoint`` takes either kind of remote browser a hosted service hands out:

- a CDP URL (``http(s)://host:port``, or ``ws(s)://.../devtools/browser/<id>``): Chromium's own
  debugging endpoint, attached with ``connect_over_cdp``;
- any other ``ws(s)://`` URL: a Playwright server (``playwright run-server``), attached with
  ``connect``.

Every row still gets a fresh context of its own in that browser.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .._errors import BrowserError, ConfigurationError
from .._logging import logger

__all__ = ["BatchBrowser", "open_batch_browser", "endpoint_kind"]


def endpoint_kind(endpoint: str) -> str:
    """``"cdp"`` or ``"playwright"`` for a browser endpoint URL; a typed error for anything else."""
    parts = urlsplit(endpoint)
    if parts.scheme in ("http", "https") and parts.hostname:
        return "cdp"
    if parts.scheme in ("ws", "wss") and parts.hostname:
        return "cdp" if parts.path.startswith("/devtools/") else "playwright"
    raise ConfigurationError(
        f"--browser-endpoint must be a CDP URL (http://host:port or ws://host:port/devtools/browser/...) or a "
        f"Playwright server URL (ws://host:port/...), got {endpoint!r}"
    )


@dataclass
class BatchBrowser:
    """A browser for batch rows and what to close when the run is over."""

    browser: Any
    playwright: Any
    owns_browser: bool

    async def close(self) -> None:
        try:
            # Ends a browser we launched; for a remote one it only disconnects.
            await self.browser.close()
        except Exception as exc:  # already gone: nothing left to release
            logger.debug("closing the batch browser failed: %r", exc)
        with contextlib.suppress(Exception):
            await self.playwright.stop()


async def open_batch_browser(endpoint: str | None = None, *, headless: bool = True) -> BatchBrowser:
    """Launch Chromium (``endpoint`` None) or attach to the remote browser at ``endpoint``."""
    if endpoint is None:
        from ..browser._session import launch_browser

        session = await launch_browser(headless=headless, direct_cdp=False)
        await session.page.context.close()  # rows open their own contexts
        return BatchBrowser(browser=session.browser, playwright=session.playwright, owns_browser=True)
    kind = endpoint_kind(endpoint)
    from playwright.async_api import async_playwright

    playwright = await async_playwright().start()
    try:
        if kind == "cdp":
            browser = await playwright.chromium.connect_over_cdp(endpoint)
        else:
            browser = await playwright.chromium.connect(endpoint)
    except Exception as exc:
        await playwright.stop()
        raise BrowserError(f"could not attach to the browser at {endpoint} ({kind} endpoint): {exc}") from exc
    return BatchBrowser(browser=browser, playwright=playwright, owns_browser=False)
