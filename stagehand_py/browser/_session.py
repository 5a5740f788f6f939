"""Getting a Playwright page to work on: launch a browser, connect to one, or wrap a page.

Whatever we open here we close; whatever the user handed us we leave alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from .._errors import BrowserError, ConfigurationError
from .._logging import logger
from ._cdp import DirectConnection
from ._chromium import DEFAULT_CHROMIUM_ARGS, find_chromium

__all__ = ["BrowserSession", "launch_browser", "connect_browser"]


@dataclass
class BrowserSession:
    """The page we drive and everything we opened to get it (to close, in reverse)."""

    page: Any
    direct: DirectConnection | None = None
    playwright: Any = None
    browser: Any = None
    owns_browser: bool = False
    closers: list[Any] = field(default_factory=list)

    async def close(self) -> None:
        if self.direct is not None:
            with contextlib.suppress(Exception):
                await self.direct.close()
        if self.browser is not None:
            try:
                # For a browser we launched this ends it; for one we connected to it only
                # disconnects (Playwright leaves a connect_over_cdp browser running).
                await self.browser.close()
            except Exception as exc:  # already gone: nothing left to release
                logger.debug("closing browser failed: %r", exc)
        if self.playwright is not None:
            with contextlib.suppress(Exception):
                await self.playwright.stop()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _browser_ws_url(http_url: str, *, timeout: float = 10.0) -> str:
    """The browser-level websocket URL behind a DevTools HTTP endpoint."""
    deadline = asyncio.get_running_loop().time() + timeout
    last: Exception | None = None
    async with httpx.AsyncClient(trust_env=False, timeout=2.0) as client:
        while asyncio.get_running_loop().time() < deadline:
            try:
                response = await client.get(http_url.rstrip("/") + "/json/version")
                response.raise_for_status()
                url: str = response.json()["webSocketDebuggerUrl"]
                return url
            except (httpx.HTTPError, KeyError, ValueError) as exc:
                last = exc
                await asyncio.sleep(0.05)
    raise BrowserError(f"The DevTools endpoint {http_url} did not answer /json/version within {timeout:.0f}s: {last!r}") from last


async def launch_browser(
    *,
    headless: bool = True,
    executable_path: str | None = None,
    args: Sequence[str] = (),
    viewport: dict[str, int] | None = None,
    direct_cdp: bool = True,
    playwright: Any = None,
) -> BrowserSession:
    """Launch Chromium with Playwright, plus a loopback debugging port for our direct CDP channel.

    ``playwright``: an async Playwright to launch with, which the caller keeps (it is not
    stopped on close); by default one is started here and stopped with the session.
    """
    borrowed = playwright is not None
    playwright = playwright if borrowed else await _start_playwright()
    try:
        try:
            bundled = playwright.chromium.executable_path
        except Exception:  # no Playwright browser installed: fine, we look elsewhere
            bundled = None
        executable = find_chromium(executable_path, playwright_path=bundled)
        port = _free_port() if direct_cdp else None
        launch_args = [*DEFAULT_CHROMIUM_ARGS, *args]
        if port is not None:
            launch_args += [f"--remote-debugging-port={port}", "--remote-debugging-address=127.0.0.1"]
        try:
            browser = await playwright.chromium.launch(executable_path=executable, headless=headless, args=launch_args)
        except Exception as exc:
            raise BrowserError(
                f"Chromium at {executable} failed to start: {exc}. If it runs as root or in a container it needs "
                "--no-sandbox (on by default here); check that the binary runs: `{executable} --headless --version`."
            ) from exc
        session = BrowserSession(page=None, playwright=None if borrowed else playwright, browser=browser, owns_browser=True)
        context = await browser.new_context(viewport=viewport or {"width": 1280, "height": 800})
        session.page = await context.new_page()
        if port is not None:
            try:
                session.direct = await DirectConnection.open(await _browser_ws_url(f"http://127.0.0.1:{port}"))
            except Exception as exc:  # the relay still works, only slower: say so and go on
                logger.warning("direct CDP connection unavailable (%r); falling back to Playwright's relay", exc)
        return session
    except BaseException:
        if not borrowed:
            await playwright.stop()
        raise


async def connect_browser(cdp_url: str, *, playwright: Any = None) -> BrowserSession:
    """Attach to a running Chromium through its CDP endpoint (``http://host:port`` or ``ws://...``).

    ``playwright`` as for :func:`launch_browser`.
    """
    if not cdp_url.startswith(("http://", "https://", "ws://", "wss://")):
        raise ConfigurationError(f"cdp_url must start with http://, https://, ws:// or wss://, got {cdp_url!r}.")
    borrowed = playwright is not None
    playwright = playwright if borrowed else await _start_playwright()
    try:
        try:
            browser = await playwright.chromium.connect_over_cdp(cdp_url)
        except Exception as exc:
            raise BrowserError(f"Could not connect to a browser at {cdp_url}: {exc}. Is it running with --remote-debugging-port?") from exc
        context = browser.contexts[0] if browser.contexts else await browser.new_context()
        page = context.pages[0] if context.pages else await context.new_page()
        session = BrowserSession(page=page, playwright=None if borrowed else playwright, browser=browser)
        try:
            ws_url = cdp_url if cdp_url.startswith("ws") and "/devtools/browser/" in cdp_url else await _browser_ws_url(cdp_url)
            session.direct = await DirectConnection.open(ws_url)
        except Exception as exc:
            logger.debug("direct CDP connection unavailable for %s (%r); using Playwright's relay", cdp_url, exc)
        return session
    except BaseException:
        if not borrowed:
            await playwright.stop()
        raise


async def _start_playwright() -> Any:
    from playwright.async_api import async_playwright

    return await async_playwright().start()
