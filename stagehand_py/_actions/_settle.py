"""Waiting for a page to settle after an action, and noticing what the action did to the page.

*Settled* means: the main document got past ``domcontentloaded`` (when a navigation is under
way), and no network request has started or finished for ``quiet_ms``. Requests that stay
open are not waited for forever: websockets and EventSource streams are ignored outright,
and any request pending longer than ``long_poll_ms`` is treated as a long-poll (or a stuck
download) and ignored too. The whole wait is capped at ``timeout_ms``; reaching the cap is
normal on busy pages, so it is logged at debug and never raised.

Why Playwright's request events rather than a CDP session with ``Network.enable``: a page
CDP session only sees its own target, so requests of out-of-process (cross-site) iframes
would be invisible unless we also auto-attached to every child target; Playwright already
does that and reports those requests on the page. The events also work unchanged for pages
reached through ``connect_over_cdp`` and cost no extra session.

Requests that started before the watch began cannot be seen, so the operations layer should
open a :class:`PageWatch` *before* executing an action and wait on it afterwards;
:func:`wait_for_settled_dom` is the standalone form for "wait now".

Late content: a single-page app renders its data a second or more after ``load`` (a
``setTimeout``, a ``fetch``), long after the network went quiet. :func:`late_content_window`
tells how long the page can still be expected to change (still loading, mutated or fetched
within the window, or young and scripted) and :func:`wait_for_change` waits for the next DOM
change; the operations use them to look again when they found nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from types import TracebackType
from typing import Any, Final, TypeVar

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Frame, Page, Request

__all__ = [
    "DEFAULT_LONG_POLL_MS",
    "DEFAULT_QUIET_MS",
    "DEFAULT_SETTLE_TIMEOUT_MS",
    "PageWatch",
    "late_content_window",
    "page_clock",
    "settled_after",
    "settled_clock",
    "wait_for_change",
    "wait_for_settled_dom",
    "watch_page",
]

logger = logging.getLogger("stagehand_py._actions")

DEFAULT_QUIET_MS: Final = 500
DEFAULT_SETTLE_TIMEOUT_MS: Final = 5_000
DEFAULT_LONG_POLL_MS: Final = 2_000
# Streams that are open by design; waiting for them to finish would always hit the cap.
_IGNORED_RESOURCE_TYPES: Final = frozenset({"websocket", "eventsource"})
_POLL_S: Final = 0.05
T = TypeVar("T")


class PageWatch:
    """Records, from :meth:`start` on, a page's network requests, main-frame navigations and new pages.

    Use it around an action::

        async with watch_page(page) as watch:
            await execute_action(page, action)
            await watch.wait_for_settled()
        if watch.navigated or watch.new_pages: ...

    ``navigated`` is True when the main frame navigated (same-document navigations such as
    ``pushState`` and hash changes included); ``url_changed`` compares the URL before and
    now; ``new_pages`` lists pages opened in the context meanwhile (popups, target=_blank).
    """

    def __init__(self, page: Page) -> None:
        self._page = page
        self._inflight: dict[Request, float] = {}
        self._last_activity = time.monotonic()
        self._started = False
        self.url_before: str = page.url
        self.navigated = False
        self.new_pages: list[Page] = []

    # --- event handlers (Playwright calls them synchronously) -----------------------------

    def _on_request(self, request: Request) -> None:
        if request.resource_type in _IGNORED_RESOURCE_TYPES:
            return
        now = time.monotonic()
        self._inflight[request] = now
        self._last_activity = now

    def _on_request_done(self, request: Request) -> None:
        if self._inflight.pop(request, None) is not None:
            self._last_activity = time.monotonic()

    def _on_frame_navigated(self, frame: Frame) -> None:
        if frame == self._page.main_frame:
            self.navigated = True

    def _on_page(self, page: Page) -> None:
        self.new_pages.append(page)

    # --- lifecycle --------------------------------------------------------------------------

    def start(self) -> PageWatch:
        """Begin listening (idempotent)."""
        if not self._started:
            self._started = True
            self.url_before = self._page.url
            self._last_activity = time.monotonic()
            self._page.on("request", self._on_request)
            self._page.on("requestfinished", self._on_request_done)
            self._page.on("requestfailed", self._on_request_done)
            self._page.on("framenavigated", self._on_frame_navigated)
            self._page.context.on("page", self._on_page)
        return self

    def stop(self) -> None:
        """Stop listening; what was recorded stays readable."""
        if self._started:
            self._started = False
            self._page.remove_listener("request", self._on_request)
            self._page.remove_listener("requestfinished", self._on_request_done)
            self._page.remove_listener("requestfailed", self._on_request_done)
            self._page.remove_listener("framenavigated", self._on_frame_navigated)
            self._page.context.remove_listener("page", self._on_page)

    async def __aenter__(self) -> PageWatch:
        return self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def url_changed(self) -> bool:
        """True when the page's URL now differs from the URL when the watch started."""
        return self._page.url != self.url_before

    @property
    def pending_requests(self) -> int:
        """Requests started and not yet finished (long-polls included)."""
        return len(self._inflight)

    # --- settling ---------------------------------------------------------------------------

    async def _document_loading(self) -> bool:
        try:
            state = await self._page.main_frame.evaluate("document.readyState")
        except PlaywrightError:
            return True  # the context is being replaced: a navigation is under way
        return bool(state == "loading")

    async def wait_for_settled(
        self,
        *,
        quiet_ms: float = DEFAULT_QUIET_MS,
        timeout_ms: float = DEFAULT_SETTLE_TIMEOUT_MS,
        long_poll_ms: float = DEFAULT_LONG_POLL_MS,
    ) -> None:
        """Wait until the page is settled (see the module docstring); never longer than ``timeout_ms``.

        Waits at least ``quiet_ms`` from the call, so a request an action starts a moment
        later (a debounced search, a ``setTimeout`` fetch) is still seen. Never raises for
        the cap or a closed page: the next action reports those.
        """
        if not self._started:
            self.start()
        begin = time.monotonic()
        cap = begin + timeout_ms / 1000
        quiet = quiet_ms / 1000
        long_poll = long_poll_ms / 1000
        self._last_activity = max(self._last_activity, begin)
        while True:
            now = time.monotonic()
            if self._page.is_closed():
                logger.debug("settle: page closed after %.0f ms", (now - begin) * 1000)
                return
            if now >= cap:
                active = sum(1 for t in self._inflight.values() if now - t < long_poll)
                logger.debug("settle: gave up after %.0f ms with %d request(s) in flight", timeout_ms, active)
                return
            active = sum(1 for t in self._inflight.values() if now - t < long_poll)
            if active == 0 and now - self._last_activity >= quiet:
                if not await self._document_loading():
                    logger.debug("settle: settled after %.0f ms", (time.monotonic() - begin) * 1000)
                    return
                try:
                    await self._page.wait_for_load_state("domcontentloaded", timeout=max(1.0, (cap - now) * 1000))
                except PlaywrightError as exc:  # the cap or a closed page; both end the wait
                    logger.debug("settle: domcontentloaded not reached: %s", str(exc).splitlines()[0])
                    return
                self._last_activity = max(self._last_activity, time.monotonic())
                continue
            await asyncio.sleep(_POLL_S)


def watch_page(page: Page) -> PageWatch:
    """A :class:`PageWatch` on ``page``, not yet started (``async with`` starts and stops it)."""
    return PageWatch(page)


async def wait_for_settled_dom(
    page: Page,
    *,
    quiet_ms: float = DEFAULT_QUIET_MS,
    timeout_ms: float = DEFAULT_SETTLE_TIMEOUT_MS,
    long_poll_ms: float = DEFAULT_LONG_POLL_MS,
) -> None:
    """Wait, from now, until ``page`` is settled; at most ``timeout_ms``, never raising for the cap.

    Requests already in flight when this is called are not seen (see :class:`PageWatch` for
    watching from before an action).
    """
    async with watch_page(page) as watch:
        await watch.wait_for_settled(quiet_ms=quiet_ms, timeout_ms=timeout_ms, long_poll_ms=long_poll_ms)


async def settled_after(page: Page, action: Coroutine[Any, Any, T], *, timeout_ms: float) -> T:
    """Run ``action`` watched from before it starts (:class:`PageWatch`), then wait for ``page`` to
    settle, at most ``timeout_ms``; what ``action`` returned. What it raises ends the watch at once."""
    try:
        async with PageWatch(page) as watch:
            done = await action
            await watch.wait_for_settled(timeout_ms=timeout_ms)
    finally:
        action.close()  # not started when the watch could not start: no "never awaited" warning
    return done


async def settled_clock(page: Page, *, quiet_ms: float, timeout_ms: float) -> float | None:
    """Wait for ``page`` to settle (:func:`wait_for_settled_dom`), then its clock (:func:`page_clock`):
    a read of the page starts from there, and DOM changes from then on are noted."""
    await wait_for_settled_dom(page, quiet_ms=quiet_ms, timeout_ms=timeout_ms)
    return await page_clock(page)


# A DOM change that counts. Not: <style> elements coming and going, or the inline style of a
# text field (a screenshot hides the caret that way; taking one is not the page changing).
_SEEN_CHANGE_JS = """(records) => records.some((r) => {
  if (r.type === 'childList') return [...r.addedNodes, ...r.removedNodes].some((n) => n.nodeName !== 'STYLE');
  const target = r.target.nodeType === 1 ? r.target : r.target.parentNode;
  if (!target || target.nodeName === 'STYLE') return false;
  return !(r.attributeName === 'style' && (target.nodeName === 'INPUT' || target.nodeName === 'TEXTAREA'
                                          || target.isContentEditable));
})"""
_OBSERVED = "{subtree: true, childList: true, characterData: true, attributes: true}"

# Installed once per document (under a symbol the page's own code does not use): the time of
# the last DOM change, so "did it change recently?" is answerable later without waiting.
_ACTIVITY_JS = """(windowMs) => {
  const key = Symbol.for('stagehand_py.activity');
  let box = document[key];
  if (!box) {
    box = {last: -1};
    Object.defineProperty(document, key, {value: box});
    const counts = SEEN_CHANGE;
    new MutationObserver((records) => { if (counts(records)) box.last = performance.now(); }).observe(document, OBSERVED);
  }
  const now = performance.now();
  const fetched = performance.getEntriesByType('resource').some(
    (e) => (e.initiatorType === 'fetch' || e.initiatorType === 'xmlhttprequest') && now - e.responseEnd < windowMs);
  return {age: now, scripts: document.scripts.length, loading: document.readyState !== 'complete',
          mutated: box.last >= 0 && now - box.last < windowMs, fetched};
}""".replace("SEEN_CHANGE", _SEEN_CHANGE_JS).replace("OBSERVED", _OBSERVED)

# Resolves true at the next DOM change (or at once when one came after page time ``after``),
# false when ``ms`` pass without one.
_NEXT_CHANGE_JS = """({ms, after}) => new Promise((resolve) => {
  const box = document[Symbol.for('stagehand_py.activity')];
  if (box && after !== null && box.last > after) { resolve(true); return; }
  const counts = SEEN_CHANGE;
  const observer = new MutationObserver((records) => {
    if (counts(records)) { observer.disconnect(); clearTimeout(timer); resolve(true); }
  });
  const timer = setTimeout(() => { observer.disconnect(); resolve(false); }, ms);
  observer.observe(document, OBSERVED);
})""".replace("SEEN_CHANGE", _SEEN_CHANGE_JS).replace("OBSERVED", _OBSERVED)


async def page_clock(page: Page) -> float | None:
    """The main document's clock (``performance.now()``, ms), and from now on its DOM changes
    are noted (for :func:`late_content_window` and :func:`wait_for_change`); None mid-navigation."""
    try:
        return float((await page.main_frame.evaluate(_ACTIVITY_JS, 0))["age"])
    except PlaywrightError:
        return None


async def late_content_window(page: Page, *, window_s: float) -> float:
    """Seconds within which ``page`` can still be expected to change by itself (0.0: it stands still).

    ``window_s`` when it is still loading, or its DOM changed or a fetch/XHR finished within
    the window (DOM changes are counted from the first call on that document); when it is
    merely young and runs scripts (a single-page app that may render its data any moment),
    what is left of the window since it loaded. A static page that loaded long ago: 0.0,
    looking again would only waste the wait.
    """
    window_ms = window_s * 1000
    try:
        state = await page.main_frame.evaluate(_ACTIVITY_JS, window_ms)
    except PlaywrightError:
        return window_s  # the document is being replaced: a navigation is under way
    if state["loading"] or state["mutated"] or state["fetched"]:
        return window_s
    if state["scripts"] > 0:
        return max(0.0, (window_ms - float(state["age"])) / 1000)
    return 0.0


async def wait_for_change(page: Page, *, timeout_s: float, after: float | None = None) -> bool:
    """Wait for the next DOM change of ``page``'s main document, at most ``timeout_s``; True if one came.

    ``after`` (a :func:`page_clock` reading): a change noted since then counts at once, so a
    change between reading the page and calling this is not missed. A navigation (the document
    replaced) counts as a change.
    """
    if timeout_s <= 0:
        return False
    try:
        async with asyncio.timeout(timeout_s + 1):  # the page's own timer ends it; this guards a frozen page
            return bool(await page.main_frame.evaluate(_NEXT_CHANGE_JS, {"ms": timeout_s * 1000, "after": after}))
    except PlaywrightError:
        return not page.is_closed()
    except TimeoutError:
        return False
