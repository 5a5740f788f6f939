"""Getting a Playwright page to work on: launch a browser, connect to one, or wrap a page.

Whatever we open here we close; whatever the user handed us we leave alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from .._errors import BrowserError, ConfigurationError, InvalidArgumentError
from .._logging import logger
from .._secrets import redact_secrets
from ._cdp import DirectConnection
from ._chromium import DEFAULT_CHROMIUM_ARGS, find_chromium
from ._guard import GuardLease, check_patterns, hold_guard
from ._options import BrowserOptions
from ._recording import TraceOnClose
from ._storage import write_storage_state

__all__ = ["BrowserSession", "launch_browser", "connect_browser", "connect_playwright_server"]


@dataclass
class BrowserSession:
    """The page we drive and everything we opened to get it (to close, in reverse)."""

    page: Any
    direct: DirectConnection | None = None
    playwright: Any = None
    browser: Any = None
    owns_browser: bool = False
    closers: list[Any] = field(default_factory=list)
    #: A persistent context (``user_data_dir``) has no browser object to close: we close this.
    persistent_context: Any = None
    #: Where the context's storage state is written on close (BrowserOptions.save_storage_state_to).
    save_storage_state_to: Any = None
    #: The hosts the context is held to (``allowed_domains``), for as long as the session is open.
    allowed_domains: tuple[str, ...] | None = None
    #: The hold on the context's guard, once :meth:`hold_guard` has run.
    guard: GuardLease | None = None
    #: Hides secret values in the guard's log (the Stagehand's variables' redaction).
    redact: Callable[[str], str] = field(default=lambda text: text)
    _guarding: asyncio.Task[None] | None = None
    #: ``trace=``: a Playwright trace of the context, written (scrubbed) on close.
    trace: TraceOnClose = field(default_factory=TraceOnClose)

    def guard_with(self, allowed_domains: Sequence[str] | None, *, redact: Callable[[str], str]) -> None:
        """Hold the context to ``allowed_domains`` from :meth:`hold_guard` on (checked now), hiding
        what ``redact`` hides in the guard's log."""
        self.redact = redact
        if allowed_domains is None:
            return
        patterns = check_patterns(allowed_domains)
        if self.allowed_domains not in (None, patterns):
            raise InvalidArgumentError("allowed_domains is given twice: pass it to launch()/connect() or in "
                                       "BrowserOptions, not both.")
        self.allowed_domains = patterns

    async def hold_guard(self) -> None:
        """Hold the context to ``allowed_domains`` (installing the guard); at once for a second call."""
        if self.allowed_domains is None or self.page is None:
            return
        if self._guarding is None:
            self._guarding = asyncio.ensure_future(self._hold())
        await asyncio.shield(self._guarding)

    async def _hold(self) -> None:
        self.guard = await hold_guard(self.page, self.allowed_domains, redact=lambda text: self.redact(text))

    async def sweep_blocked_tabs(self) -> None:
        """Close the tabs opened to an address the guard refused (they show an error page)."""
        if self.guard is not None:
            await self.guard.sweep()

    async def release_guard(self) -> None:
        if self._guarding is not None:
            await asyncio.gather(self._guarding, return_exceptions=True)  # a hold under way ends first
        guard, self.guard = self.guard, None
        if guard is not None:
            await guard.release()

    async def close(self) -> None:
        try:
            await self.trace.finish()  # first: the context is still there to stop the trace of
        except Exception as exc:  # the context went first (the user closed it): the trace went with it
            logger.warning("could not write the trace to %s: %r", self.trace.path, exc)
        try:
            await self.release_guard()  # before the browser goes: the guard's routes and sessions are undone
        except Exception as exc:  # closing goes on: what the guard held goes with the context
            logger.warning("could not remove the allowed_domains guard: %r", exc)
        if self.save_storage_state_to is not None and self.page is not None:
            try:
                write_storage_state(self.save_storage_state_to, await self.page.context.storage_state())
            except Exception as exc:  # the state is the user's: losing it is worth a warning, not a crash on close
                logger.warning("could not save the storage state to %s: %r", self.save_storage_state_to, exc)
        if self.direct is not None:
            with contextlib.suppress(Exception):
                await self.direct.close()
        if self.persistent_context is not None:
            try:
                await self.persistent_context.close()
            except Exception as exc:  # already gone: nothing left to release
                logger.debug("closing the persistent context failed: %r", exc)
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
    options: BrowserOptions | None = None,
) -> BrowserSession:
    """Launch Chromium with Playwright, plus a loopback debugging port for our direct CDP channel.

    ``playwright``: an async Playwright to launch with, which the caller keeps (it is not
    stopped on close); by default one is started here and stopped with the session.
    ``options`` sets up the context (storage state, profile folder, proxy, locale, ...).
    """
    options = options or BrowserOptions()
    context_options = {"viewport": viewport or {"width": 1280, "height": 800}, **options.context_options()}
    launch_extra: dict[str, Any] = {}
    if options.proxy is not None:
        launch_extra["proxy"] = options.proxy.to_playwright()
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
        session = BrowserSession(page=None, playwright=None if borrowed else playwright, owns_browser=True,
                                 save_storage_state_to=options.save_storage_state_to)
        try:
            if options.user_data_dir is not None:
                context = await playwright.chromium.launch_persistent_context(
                    str(options.user_data_dir), executable_path=executable, headless=headless, args=launch_args,
                    **launch_extra, **context_options)
                session.persistent_context = context
            else:
                session.browser = await playwright.chromium.launch(executable_path=executable, headless=headless,
                                                                   args=launch_args, **launch_extra)
        except Exception as exc:
            raise BrowserError(
                f"Chromium at {executable} failed to start: {_redacted(exc, options)}. If it runs as root or in a "
                "container it needs --no-sandbox (on by default here); check that the binary runs: "
                f"`{executable} --headless --version`; a persistent profile folder cannot be open in two browsers."
            ) from None  # not chained: Playwright's error repeats the launch options, proxy password included
        if session.persistent_context is None:
            try:
                context = await session.browser.new_context(**context_options)
            except Exception as exc:
                with contextlib.suppress(Exception):
                    await session.browser.close()
                raise BrowserError(f"Could not set up the browser context: {_redacted(exc, options)}") from None
        session.trace.configure(options.trace, options.trace_path, what="BrowserOptions")
        await session.trace.start(context)  # before the first page loads
        # A persistent context opens with one blank page; use it rather than leave it behind.
        session.page = context.pages[0] if context.pages else await context.new_page()
        if port is not None:
            try:
                session.direct = await DirectConnection.open(await _browser_ws_url(f"http://127.0.0.1:{port}"))
            except Exception as exc:  # the relay still works, only slower: say so and go on
                logger.warning("direct CDP connection unavailable (%r); falling back to Playwright's relay", exc)
    except BaseException:
        if not borrowed:
            await playwright.stop()
        raise
    await _guarded(session, options.allowed_domains)
    return session


async def connect_browser(cdp_url: str, *, playwright: Any = None,
                          allowed_domains: Sequence[str] | None = None) -> BrowserSession:
    """Attach to a running Chromium through its CDP endpoint (``http://host:port`` or ``ws://...``).

    ``playwright`` as for :func:`launch_browser`; ``allowed_domains`` holds the browser's
    context (the one driven) to those hosts until the session closes.
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
    except BaseException:
        if not borrowed:
            await playwright.stop()
        raise
    await _guarded(session, allowed_domains)
    return session


async def connect_playwright_server(
    ws_endpoint: str, *, headers: dict[str, str] | None = None, playwright: Any = None,
    options: BrowserOptions | None = None, timeout: float = 30.0,
) -> BrowserSession:
    """Attach to a Playwright server (``playwright run-server`` / ``launch-server``) and open a
    fresh context on it, set up with ``options``. ``headers`` go with the websocket handshake
    (a hosted service's token, or ``x-playwright-launch-options``) and are never logged."""
    if not ws_endpoint.startswith(("ws://", "wss://")):
        raise ConfigurationError(
            f"ws_endpoint must start with ws:// or wss://, got {_without_query(ws_endpoint)!r}. For a browser's "
            "DevTools endpoint (http://host:9222) use Stagehand.connect(cdp_url=...)."
        )
    options = options or BrowserOptions()
    if options.user_data_dir is not None:
        raise ConfigurationError("BrowserOptions(user_data_dir=...) needs a browser launched here: use Stagehand.launch().")
    borrowed = playwright is not None
    playwright = playwright if borrowed else await _start_playwright()
    try:
        try:
            browser = await playwright.chromium.connect(ws_endpoint, headers=headers, timeout=timeout * 1000)
        except Exception as exc:
            raise BrowserError(
                f"Could not connect to a Playwright server at {_without_query(ws_endpoint)}: "
                f"{_redacted(exc, options, *(headers or {}).values())}. Is `playwright run-server` running there, "
                "and do the client and server Playwright versions match?"
            ) from None
        session = BrowserSession(page=None, playwright=None if borrowed else playwright, browser=browser,
                                 save_storage_state_to=options.save_storage_state_to)
        context_options = {"viewport": {"width": 1280, "height": 800}, **options.context_options()}
        if options.proxy is not None:
            context_options["proxy"] = options.proxy.to_playwright()
        try:
            context = await browser.new_context(**context_options)
        except Exception as exc:
            with contextlib.suppress(Exception):
                await browser.close()
            raise BrowserError(f"Could not set up the browser context: {_redacted(exc, options)}") from None
        session.trace.configure(options.trace, options.trace_path, what="BrowserOptions")
        await session.trace.start(context)  # before the first page loads
        session.page = await context.new_page()
    except BaseException:
        if not borrowed:
            await playwright.stop()
        raise
    await _guarded(session, options.allowed_domains)
    return session


async def _guarded(session: BrowserSession, allowed_domains: Sequence[str] | None) -> None:
    """Hold ``session``'s context to ``allowed_domains`` before anything navigates; a session that
    cannot be guarded is closed (with what it opened) rather than handed over unguarded."""
    if allowed_domains is None:
        return
    try:
        session.allowed_domains = check_patterns(allowed_domains)
        await session.hold_guard()
    except BaseException:
        await session.close()
        raise


def _without_query(url: str) -> str:
    # Hosted endpoints carry tokens in the query string: never echo it.
    return url.split("?", 1)[0]


def _redacted(exc: Exception, options: BrowserOptions, *more: str) -> str:
    """A Playwright error's text without the proxy password or header values in it.

    Errors built from it are raised ``from None``: Playwright's own exception quotes the call's
    options (the proxy password, the handshake headers), and a chained cause prints in full."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    hidden = [*more, *((options.proxy.password,) if options.proxy and options.proxy.password else ())]
    hidden += list((options.extra_http_headers or {}).values())
    return redact_secrets(text, hidden)  # the library's one redaction: %secret%, echoes included


async def _start_playwright() -> Any:
    from playwright.async_api import async_playwright

    return await async_playwright().start()
