"""Enforcement where Chromium follows redirects: every hop of a chain, checked before it is sent.

Playwright hands routes only a request's first hop; later hops of a chain (also after a
``route.fulfill`` with a 3xx) are continued without asking them. So the guard also intercepts at
the browser level (DevTools ``Fetch`` on the browser's own session), where Chromium pauses every
request it sends, each later hop included, with its URL resolved by Chromium itself: one to
another host from a frame of the guarded context fails before it is sent, for navigations,
frames, subresources and ``fetch`` alike, and is recorded. Requests with no frame (a service
worker's) are held to the allowlist too, whichever context they belong to, while a guard is
installed. A document at the end of a chain never passed the route: its ``Connection-Allowlist``
is set here. Persistent contexts have a browser object too (Playwright 1.65); where no
browser-level session can be had, each page's own session intercepts its requests instead (a
warning says so).
"""

from __future__ import annotations

import asyncio
import base64
import logging
from typing import Any

from ._scope import GuardScope
from ._speculation import rewrite_headers

__all__ = ["FRAME_TREE_TIMEOUT", "HopCheck"]

logger = logging.getLogger("stagehand_py")

#: Seconds to wait for a page's frame tree when telling whose request a frame made.
FRAME_TREE_TIMEOUT = 5.0


class HopCheck:
    def __init__(self, scope: GuardScope) -> None:
        self._scope = scope
        self.session: Any = None  # the browser-level DevTools session that checks each hop
        self.per_page = False  # no browser-level session: each page's session checks them
        self._context_id: str | None = None  # this context's DevTools id, to tell its requests from others'
        self._main_frame_id = ""
        self._frames: set[str] = set()

    async def install(self) -> None:
        """Start checking; the pages already open are watched (their sessions known) by now."""
        main = self._scope.page_sessions.get(self._scope.main_page)
        if main is not None:
            info = (await main.send("Target.getTargetInfo"))["targetInfo"]
            self._context_id, self._main_frame_id = info.get("browserContextId"), str(info.get("targetId", ""))
        try:
            self.session = await self._browser_session()  # set first: _is_ours tells its events by it
            await self.intercept(self.session)
        except Exception as exc:
            self.session = None
            # Each page's own session pauses that page's requests instead (its same-process frames'
            # included; an out-of-process frame's subresources are on the frame's own target).
            logger.warning("allowed_domains: cannot check redirect hops at the browser level (%s); checking them on "
                           "each page's own DevTools session instead", exc)
            self.per_page = True
            for page, page_session in list(self._scope.page_sessions.items()):
                try:
                    await self.intercept(page_session)
                except Exception as page_exc:  # the page closed meanwhile
                    logger.warning("allowed_domains: cannot check redirect hops on %s: %s", self._scope.redact(page.url),
                                   self._scope.redact(str(page_exc)))

    async def watch_page(self, session: Any) -> None:
        """A page watched after install: its own session checks its hops where no browser-level one can."""
        if self.per_page:
            await self.intercept(session)

    def detach_later(self) -> Any:
        """The browser-level session, handed to the caller to detach (also ends its interception)."""
        session, self.session = self.session, None
        return session

    async def _browser_session(self) -> Any:
        browser = self._scope.context.browser  # a persistent context has one too (measured: Playwright 1.65)
        if browser is None:
            raise RuntimeError("the context has no browser object")
        return await browser.new_browser_cdp_session()

    async def intercept(self, session: Any) -> None:
        session.on("Fetch.requestPaused", lambda event: self._on_paused(session, event))
        await session.send("Fetch.enable", {"patterns": [
            {"urlPattern": "*", "requestStage": "Request"},
            # A document that arrives after a redirect never passed the route: its headers are set here.
            {"urlPattern": "*", "resourceType": "Document", "requestStage": "Response"}]})

    def _on_paused(self, session: Any, event: dict[str, Any]) -> None:
        if "responseStatusCode" in event or "responseErrorReason" in event:
            self._scope.later(self._set_document_headers(session, event))
        else:
            self._scope.later(self._decide_hop(session, event))

    async def _set_document_headers(self, session: Any, event: dict[str, Any]) -> None:
        request_id = event["requestId"]
        url = str(event.get("request", {}).get("url", ""))
        try:
            if "responseStatusCode" not in event:  # the network failed: the browser shows its own error
                await session.send("Fetch.continueRequest", {"requestId": request_id})
                return
            headers = [(str(h["name"]), str(h["value"])) for h in event.get("responseHeaders") or []]
            status = int(event["responseStatusCode"])
            # A redirect's headers make no document: only the response that commits one is changed.
            ours = not 300 <= status < 400 and await self._is_ours(session, str(event.get("frameId", "")))
            rewritten = rewrite_headers(self._scope, headers, url, document=True) if ours else None
            if rewritten is None:
                await session.send("Fetch.continueResponse", {"requestId": request_id})
                return
            # Fulfilled, not continued with new headers: Chromium reads a document's policies from
            # the headers the network gave unless the response is fulfilled (measured: a
            # Connection-Allowlist added by Fetch.continueResponse is not enforced).
            body = await session.send("Fetch.getResponseBody", {"requestId": request_id})
            data = str(body.get("body", ""))
            fulfilled: dict[str, Any] = {
                "requestId": request_id, "responseCode": status,
                "responseHeaders": [{"name": n, "value": v} for n, v in rewritten],
                "body": data if body.get("base64Encoded") else base64.b64encode(data.encode()).decode("ascii")}
            if event.get("responseStatusText"):
                fulfilled["responsePhrase"] = event["responseStatusText"]
            await session.send("Fetch.fulfillRequest", fulfilled)
        except Exception as exc:  # the request or the browser went away meanwhile
            logger.debug("allowed_domains: passing the document %s failed: %s", self._scope.redact(url),
                         self._scope.redact(str(exc)))

    async def _decide_hop(self, session: Any, event: dict[str, Any]) -> None:
        """Every request the browser sends, paused: one to another host from a frame of this
        context fails. Routes saw its first hop already; this catches the hops Playwright hands
        them no more (a redirect, or the fresh request a cross-origin ``fetch`` redirect becomes)."""
        request_id = event["requestId"]
        url = str(event.get("request", {}).get("url", ""))
        scope = self._scope
        try:
            frame_id = str(event.get("frameId", ""))
            if scope.installed and not scope.allows(url) and await self._is_ours(session, frame_id):
                resource = str(event.get("resourceType", "")).lower()
                new_tab = resource == "document" and frame_id in scope.tabs and frame_id != self._main_frame_id
                scope.log.record(url, "popup" if new_tab else "navigation" if resource == "document" else "request",
                                 resource)
                await session.send("Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"})
            else:
                await session.send("Fetch.continueRequest", {"requestId": request_id})
        except Exception as exc:  # the request or the browser went away meanwhile
            logger.debug("allowed_domains: deciding on %s failed: %s", scope.redact(url), scope.redact(str(exc)))

    async def _is_ours(self, session: Any, frame_id: str) -> bool:
        """Whether ``frame_id`` is a frame of this guard's context (the browser-level session sees
        every context). Looked up only for requests to another host; a request with no frame (a
        service worker's) counts as ours: blocking it is the safe side. A page's own session sees
        that page's requests only."""
        if session is not self.session or not frame_id or self._context_id is None or frame_id in self._frames:
            return True
        targets = (await session.send("Target.getTargets")).get("targetInfos", [])
        ours = [t for t in targets if t.get("browserContextId") == self._context_id]
        self._scope.tabs = {str(t["targetId"]) for t in ours if t.get("type") == "page"}
        frames = {str(t["targetId"]) for t in ours}  # pages and out-of-process frames: their ids are frame ids
        if frame_id not in frames:
            for page_session in list(self._scope.page_sessions.values()):  # same-process frames
                try:
                    # A page in the middle of a navigation may not answer: bounded, and ours if unsure.
                    tree = await asyncio.wait_for(page_session.send("Page.getFrameTree"), FRAME_TREE_TIMEOUT)
                except TimeoutError:
                    return True
                except Exception:  # the page closed meanwhile
                    continue
                stack = [tree["frameTree"]]
                while stack:
                    node = stack.pop()
                    frames.add(str(node["frame"]["id"]))
                    stack.extend(node.get("childFrames", []))
        self._frames = frames
        return frame_id in frames
