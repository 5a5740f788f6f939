"""One browser context's guard: the parts put together, installed and removed.

Installed, it routes every request of every page of the context (``_routes``), checks each
later redirect hop where Chromium follows it (``_hops``), removes speculation rules from every
page and sets each document's ``Connection-Allowlist`` (``_speculation``), and records what it
refused (``_record``); a tab opened to a refused address is closed (:meth:`DomainGuard.sweep`).
On an older browser than Chromium 152 the header is left out, with a warning: a prefetch from
rules the remover cannot reach still leaves (docs/security.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

from ..._types import BlockedKind, BlockedRequest
from ._hops import FRAME_TREE_TIMEOUT, HopCheck
from ._policy import Policy, allowlist_enforced, connection_allowlist
from ._record import BlockedLog
from ._routes import RouteCheck
from ._scope import GuardScope
from ._speculation import SpeculationWatch

__all__ = ["DomainGuard"]

logger = logging.getLogger("stagehand_py")


class DomainGuard:
    """Routes a browser context through the allowlist while installed.

    ``patterns`` is the first set it holds the context to; :meth:`narrow` adds more for a while
    (a URL then passes only when every set admits it). ``redact`` hides secret values in its log;
    :meth:`redact_with` adds another holder's redaction."""

    def __init__(self, patterns: Sequence[str], *, main_page: Any, redact: Callable[[str], str] = lambda text: text) -> None:
        self._policy = Policy()
        self._first = self._policy.add(patterns)  # a bad pattern fails here, not in a handler
        self._redactors: list[Callable[[str], str]] = [redact]
        self._scope = GuardScope(context=main_page.context, main_page=main_page, allows=self._policy.allows,
                                 log=BlockedLog(self._redact))
        self._routes = RouteCheck(self._scope)
        self._hops = HopCheck(self._scope)
        self._speculation = SpeculationWatch(self._scope)
        self._popups: list[Any] = []
        self._unread = 0
        self._enforced: bool | None = None  # whether the browser enforces Connection-Allowlist (known once installed)
        self._installing: asyncio.Task[None] | None = None

    @property
    def patterns(self) -> list[str]:
        """The first set still held (the one the guard was made with, while its holder holds it)."""
        sets = self._policy.sets
        return list(sets[0]) if sets else []

    @property
    def installed(self) -> bool:
        return self._scope.installed

    def allows(self, url: str) -> bool:
        return self._policy.allows(url)

    def narrow(self, patterns: Sequence[str]) -> tuple[str, ...]:
        """Hold the context to ``patterns`` as well, until :meth:`widen` gets what this returned."""
        added = self._policy.add(patterns)
        self._refresh_header()
        return added

    def widen(self, added: tuple[str, ...]) -> None:
        self._policy.remove(added)
        self._refresh_header()

    def release_first(self) -> None:
        """The set the guard was made with is no longer held (its holder let go)."""
        self.widen(self._first)

    def redact_with(self, redact: Callable[[str], str]) -> Callable[[], None]:
        """Also hide what ``redact`` hides in the log; returns the call that stops it."""
        self._redactors.append(redact)
        return lambda: self._redactors.remove(redact)

    def _redact(self, text: str) -> str:
        for redact in list(self._redactors):
            text = redact(text)
        return text

    @property
    def blocked(self) -> list[BlockedRequest]:
        return self._scope.log.items

    def record(self, url: str, kind: BlockedKind, resource_type: str = "") -> BlockedRequest:
        return self._scope.log.record(url, kind, resource_type)

    def drain(self) -> list[BlockedRequest]:
        """The blocks recorded since the last call."""
        new = self.blocked[self._unread:]
        self._unread = len(self.blocked)
        return new

    async def install(self) -> None:
        """Install the guard; a second call (or one while the first runs) waits for the first."""
        if self._installing is None:
            self._installing = asyncio.ensure_future(self._install())
        await asyncio.shield(self._installing)

    async def _install(self) -> None:
        scope = self._scope
        scope.installed = True
        self._enforced = self._browser_enforces_header()
        self._refresh_header()
        for page in scope.context.pages:
            await self._watch_page(page)
        await self._hops.install()
        await self._routes.install()
        scope.context.on("page", self._on_page)

    def _browser_enforces_header(self) -> bool:
        browser = self._scope.context.browser
        version = str(browser.version) if browser is not None else ""
        if allowlist_enforced(version):
            return True
        logger.warning("allowed_domains: this browser (%s) does not enforce Connection-Allowlist (Chromium 152+): "
                       "speculation rules in a shadow root, or written by an opener into a new window, can still "
                       "prefetch from another host (recorded, not stopped)", version or "version unknown")
        return False

    def _refresh_header(self) -> None:
        """The header each document gets from now on: the sets held now (a document already loaded
        keeps the list it came with until it navigates)."""
        if self._enforced:
            self._scope.header = connection_allowlist(self._policy.header_patterns())

    async def uninstall(self) -> None:
        scope = self._scope
        if self._installing is not None:
            await asyncio.gather(self._installing, return_exceptions=True)  # a half-done install is undone too
        if not scope.installed:
            return
        scope.installed = False
        with contextlib.suppress(KeyError):  # an install that failed before adding it
            scope.context.remove_listener("page", self._on_page)
        await self.sweep()
        await self._stop_watching()
        await self._routes.uninstall()

    # --- each page: speculation rules removed, error pages read, redirect hops if per page -----

    async def _watch_page(self, page: Any, *, opened: bool = False) -> None:
        scope = self._scope
        if page in scope.page_sessions or page.is_closed() or not scope.installed:
            return
        try:
            session = await scope.context.new_cdp_session(page)
            scope.page_sessions[page] = session
            session.on("Page.frameNavigated", lambda e: self._on_error_page(page, e.get("frame", {})))
            page.on("framenavigated", self._on_frame_navigated)
            await session.send("Page.enable")
            if opened:  # a new tab the header refused shows its error page before the guard attaches to it
                self._on_error_page(page, (await session.send("Page.getFrameTree"))["frameTree"]["frame"])
            await self._speculation.watch(session)
            scope.tabs.add(str((await session.send("Target.getTargetInfo"))["targetInfo"].get("targetId", "")))
            await self._hops.watch_page(session)
        except Exception as exc:  # a page closing meanwhile, or a browser without these commands
            logger.warning("allowed_domains: cannot watch the page %s (speculative loads, redirect hops): %s",
                           scope.redact(page.url), scope.redact(str(exc)))

    def _on_error_page(self, page: Any, frame: dict[str, Any]) -> None:
        """A frame showing the browser's error page: recorded when its address is outside the
        allowlist and no route or interception recorded it (:meth:`BlockedLog.error_page`)."""
        url = str(frame.get("unreachableUrl") or "")
        if url and self._scope.installed and not self.allows(url):
            self._scope.log.error_page(frame, main_page=page is self._scope.main_page)

    def _on_frame_navigated(self, frame: Any) -> None:
        # A cross-site frame's error page is an out-of-process frame: its own DevTools target.
        if self._scope.installed and frame.parent_frame is not None and frame.url.startswith("chrome-error:"):
            self._scope.later(self._read_frame_error(frame))

    async def _read_frame_error(self, frame: Any) -> None:
        try:
            session = await self._scope.context.new_cdp_session(frame)
        except Exception:
            return  # a frame of its parent's process: its page's session reported it
        try:
            tree = await session.send("Page.getFrameTree")
            self._on_error_page(frame.page, {**tree["frameTree"]["frame"], "parentId": "child"})
        except Exception as exc:  # the frame went away meanwhile
            logger.debug("allowed_domains: reading a frame's error page failed: %s", self._scope.redact(str(exc)))
        finally:
            try:
                await session.detach()
            except Exception as exc:
                logger.debug("allowed_domains: detaching a frame's DevTools session failed: %s", exc)

    def _on_page(self, page: Any) -> None:
        self._popups.append(page)
        if self._scope.installed:
            self._scope.later(self._watch_page(page, opened=True))

    async def _stop_watching(self) -> None:
        scope = self._scope
        for session in scope.page_sessions.values():  # a document that outlives the guard keeps its rules again
            try:
                tree = await asyncio.wait_for(session.send("Page.getFrameTree"), FRAME_TREE_TIMEOUT)
                await self._speculation.end(session, tree["frameTree"]["frame"]["id"])
            except Exception as exc:  # the page closed or is navigating away
                logger.debug("allowed_domains: ending the speculation-rules remover failed: %s", exc)
        for page in scope.page_sessions:
            with contextlib.suppress(KeyError):  # a watch that failed before adding it
                page.remove_listener("framenavigated", self._on_frame_navigated)
        sessions = [self._hops.detach_later(), *scope.page_sessions.values()]
        scope.page_sessions.clear()
        await scope.finish_pending()
        for session in sessions:
            if session is None:
                continue
            try:
                await session.detach()  # also ends its Fetch interception and the prerendering switch
            except Exception as exc:  # the browser or the page is gone already
                logger.debug("allowed_domains: detaching a DevTools session failed: %s", exc)

    async def sweep(self) -> None:
        """Close the tabs that were opened to a blocked address (they show an error or a blank page)."""
        log = self._scope.log
        if not log.popup_blocked:
            return
        log.popup_blocked = False
        blocked_urls = {b.url for b in log.items if b.kind == "popup"}
        for page in self._popups:
            if page is self._scope.main_page or page.is_closed():
                continue
            if page.url in blocked_urls or page.url == "about:blank" or page.url.startswith("chrome-error:"):
                try:
                    await page.close()
                except Exception as exc:  # already closed
                    logger.debug("allowed_domains: closing blocked popup failed: %s", exc)
