"""``allowed_domains``: glob patterns checked for every navigation, request and new tab.

Enforcement is a ``context.route("**/*")`` handler, so it covers the main page, frames,
fetch/XHR, subresources and popups alike (Playwright routes apply to every page of the
context), plus a ``context.route_web_socket`` handler for WebSockets. A blocked request is
aborted as ``blockedbyclient``, recorded, and a popup that was opened to a blocked address is
closed.

Redirects: Playwright hands only a request's first hop to routes; later hops of a chain (also
after a ``route.fulfill`` with a 3xx) are continued without asking them. The route fetches each
allowed request itself without following redirects (``route.fetch(max_redirects=0)``) and
blocks a first ``Location`` elsewhere (resolved by the WHATWG URL rules, where
``/\\evil.example/`` is ``//evil.example/``); the guard also intercepts at the browser level
(DevTools ``Fetch`` on the browser's own session), where Chromium pauses every request it sends,
each later hop of a chain included, with its URL resolved by Chromium itself: one to another host
from a frame of the guarded context fails before it is sent, for navigations, frames,
subresources and ``fetch`` alike, and is recorded. Requests with no frame (a service worker's)
are held to the allowlist too, whichever context they belong to, while a guard is installed.
Persistent contexts have a browser object too (Playwright 1.65); where no browser-level session
can be had, each page's own session intercepts its requests instead (a warning says so).
Responses pass through the route buffered (a streamed response arrives whole); a ``page.route``
the caller installed still runs first; a ``context.route`` installed before the guard no longer
sees allowed requests.

Speculative loads: ``<script type="speculationrules">`` prefetches and prerenders, and
``<link rel=prerender>``, are made by the browser outside every route. Prerendering is switched
off for each page of the guarded context (``Page.setPrerenderingAllowed``), and every rule set is
removed from the page before it reaches the browser, in an isolated world, and a
``Speculation-Rules`` response header is taken out (see ``_speculation``); each address a rule
set asked for outside the allowlist is recorded (``kind="speculation"``). Rule sets the remover
cannot reach (inside a shadow root, or written by an opener into a new window's first document)
are refused by the browser itself: every document of the context arrives with a
``Connection-Allowlist`` header that lists the allowlist (Chromium 152+; set by the route, and by
the browser-level interception for a document at the end of a redirect chain), and they are
recorded from the browser's ``Preload`` events. That header also makes Chromium refuse the
document's other connections elsewhere before a route sees them; those are recorded from the
context's failed-request events (``net::ERR_NETWORK_ACCESS_REVOKED``). On an older browser the
header is left out, with a warning: such a prefetch still leaves (docs/security.md).

Patterns: ``"example.com"`` (that host), ``"*.example.com"`` (subdomains only),
``"127.0.0.1:8080"`` (host and port), ``"https://*.example.com"`` (scheme too). ``data:``,
``blob:`` and ``about:`` URLs are always allowed: they load nothing from the network.
"""

from __future__ import annotations

import asyncio
import base64
import fnmatch
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from .._errors import InvalidArgumentError
from .._util import normal_host, resolve_url, url_parts
from ._speculation import (
    ALLOWLIST_HEADER,
    REMOVER_SOURCE,
    RULES_HEADER,
    STOP_SOURCE,
    allowlist_enforced,
    connection_allowlist,
    header_rule_sets,
    speculation_targets,
)
from ._speculation import (
    BINDING as SPECULATION_BINDING,
)
from ._speculation import (
    WORLD as SPECULATION_WORLD,
)
from ._types import BlockedRequest

__all__ = ["DomainGuard", "url_allowed"]

logger = logging.getLogger("stagehand_py")

_LOCAL_SCHEMES = ("data", "blob", "about", "chrome-error")
#: Seconds to wait for a page's frame tree when telling whose request a frame made.
_FRAME_TREE_TIMEOUT = 5.0
#: How Chromium fails a connection a document's ``Connection-Allowlist`` refuses.
_REFUSED_BY_ALLOWLIST = "net::ERR_NETWORK_ACCESS_REVOKED"


def _origin(url: str) -> str:
    parts = url_parts(url)
    return f"{parts.scheme}://{parts.host}:{parts.port}" if parts is not None else url


def _parse_pattern(pattern: str) -> tuple[str | None, str, str | None]:
    scheme: str | None = None
    rest = pattern.strip().lower()
    if "://" in rest:
        scheme, rest = rest.split("://", 1)
    rest = rest.split("/", 1)[0]
    port: str | None = None
    if rest.count(":") == 1:
        rest, port = rest.split(":")
    if not rest:
        raise InvalidArgumentError(f"allowed_domains pattern {pattern!r} names no host; use e.g. 'example.com' or '*.example.com'.")
    return scheme, normal_host(rest), port


def url_allowed(url: str, patterns: Sequence[str]) -> bool:
    """Whether ``url``, read as a browser reads it, matches one of the glob ``patterns`` (see the
    module docstring)."""
    parts = url_parts(url)
    if parts is None:
        return False
    scheme, host = parts.scheme, parts.host
    if scheme in _LOCAL_SCHEMES:
        return True
    effective_port = parts.port or {"http": "80", "https": "443", "ws": "80", "wss": "443"}.get(scheme, "")
    for pattern in patterns:
        p_scheme, p_host, p_port = _parse_pattern(pattern)
        if p_scheme is not None and not fnmatch.fnmatchcase(scheme, p_scheme):
            continue
        if p_port is not None and p_port != "*" and p_port != effective_port:
            continue
        if fnmatch.fnmatchcase(host, p_host):
            return True
    return False


class DomainGuard:
    """Routes a browser context through the allowlist while installed."""

    def __init__(self, patterns: Sequence[str], *, main_page: Any, redact: Callable[[str], str] = lambda text: text) -> None:
        for p in patterns:
            _parse_pattern(p)  # fail early on a bad pattern
        self.patterns = list(patterns)
        # The header every document of the context gets, when the browser enforces it (install()).
        self._allowlist: str | None = None
        self._redact = redact  # a blocked URL may carry a secret (a GET form): logs get it redacted
        self._main_page = main_page
        self._context = main_page.context
        self.blocked: list[BlockedRequest] = []
        self._unread = 0
        self._installed = False
        self._popups: list[Any] = []
        self._popup_blocked = False
        self._hops: Any = None  # the browser-level DevTools session that checks each redirect hop
        self._hops_per_page = False  # no browser-level session: each page's session checks them
        self._page_sessions: dict[Any, Any] = {}  # page -> its DevTools session (speculation; hops if per page)
        self._pending: set[asyncio.Task[None]] = set()
        self._context_id: str | None = None  # this context's DevTools id, to tell its requests from others'
        self._main_frame_id = ""
        self._frames: set[str] = set()
        self._tabs: set[str] = set()
        # Error pages for addresses outside the allowlist, and the documents blocked and recorded, per
        # origin (an error page after a redirect shows the origin only): an error page beyond those
        # records is a load the header refused unseen.
        self._error_pages: set[str] = set()  # loader ids already counted
        self._error_page_count: Counter[str] = Counter()
        self._document_blocks: Counter[str] = Counter()

    def allows(self, url: str) -> bool:
        return url_allowed(url, self.patterns)

    async def install(self) -> None:
        self._installed = True
        self._allowlist = self._connection_allowlist()
        for page in self._context.pages:
            await self._watch_page(page)
        main = self._page_sessions.get(self._main_page)
        if main is not None:
            info = (await main.send("Target.getTargetInfo"))["targetInfo"]
            self._context_id, self._main_frame_id = info.get("browserContextId"), str(info.get("targetId", ""))
        await self._watch_redirect_hops()
        await self._context.route("**/*", self._handle)
        await self._context.route_web_socket(lambda url: True, self._handle_web_socket)
        self._context.on("page", self._on_page)
        self._context.on("requestfailed", self._on_request_failed)

    def _connection_allowlist(self) -> str | None:
        browser = self._context.browser
        version = str(browser.version) if browser is not None else ""
        if allowlist_enforced(version):
            return connection_allowlist([_parse_pattern(p) for p in self.patterns])
        logger.warning("allowed_domains: this browser (%s) does not enforce Connection-Allowlist (Chromium 152+): "
                       "speculation rules in a shadow root, or written by an opener into a new window, can still "
                       "prefetch from another host (recorded, not stopped)", version or "version unknown")
        return None

    async def uninstall(self) -> None:
        if not self._installed:
            return
        self._installed = False
        self._context.remove_listener("page", self._on_page)
        self._context.remove_listener("requestfailed", self._on_request_failed)
        await self.sweep()
        await self._stop_watching()
        try:
            await self._context.unroute("**/*", self._handle)
            # Playwright has no unroute for WebSockets: the handler lets everything through
            # once the guard is uninstalled.
        except Exception as exc:  # the context may be closed already
            logger.debug("allowed_domains: unroute failed: %s", exc)

    def drain(self) -> list[BlockedRequest]:
        """The blocks recorded since the last call."""
        new = self.blocked[len(self.blocked) - self._unread :] if self._unread else []
        self._unread = 0
        return new

    def record(self, url: str, kind: Any, resource_type: str = "") -> BlockedRequest:
        parts = url_parts(url)
        item = BlockedRequest(url=parts.href if parts is not None else url, kind=kind, resource_type=resource_type)
        self.blocked.append(item)
        if kind in ("navigation", "popup") and resource_type == "document":
            self._document_blocks[_origin(item.url)] += 1
        self._unread += 1
        logger.info("allowed_domains: blocked %s %s", kind, self._redact(url))
        return item

    async def _handle_web_socket(self, ws: Any) -> None:
        if not self._installed or self.allows(ws.url):
            ws.connect_to_server()
            return
        self.record(ws.url, "request", "websocket")
        await ws.close(code=1008, reason="blocked by allowed_domains")

    async def _handle(self, route: Any, request: Any) -> None:
        url = request.url
        if not self.allows(url):
            await self._block(route, request, url)
        else:
            # Fetched here, not handed on: a worker whose script came through a fulfilled
            # response cannot open a WebSocket past the guard (measured: with the request simply
            # continued, a worker's WebSocket to another host connects).
            await self._pass_checking_redirects(route, request)

    # --- redirect hops, checked where Chromium follows them ---------------------------------

    async def _watch_redirect_hops(self) -> None:
        try:
            self._hops = await self._new_browser_session()  # set first: _is_ours tells its events by it
            await self._intercept(self._hops)
        except Exception as exc:
            self._hops = None
            # Each page's own session pauses that page's requests instead (its same-process frames'
            # included; an out-of-process frame's subresources are on the frame's own target).
            logger.warning("allowed_domains: cannot check redirect hops at the browser level (%s); checking them on "
                           "each page's own DevTools session instead", exc)
            self._hops_per_page = True
            for page, page_session in list(self._page_sessions.items()):
                try:
                    await self._intercept(page_session)
                except Exception as page_exc:  # the page closed meanwhile
                    logger.warning("allowed_domains: cannot check redirect hops on %s: %s", self._redact(page.url),
                                   self._redact(str(page_exc)))

    async def _new_browser_session(self) -> Any:
        browser = self._context.browser  # a persistent context has one too (measured: Playwright 1.65)
        if browser is None:
            raise RuntimeError("the context has no browser object")
        return await browser.new_browser_cdp_session()

    async def _intercept(self, session: Any) -> None:
        session.on("Fetch.requestPaused", lambda event: self._on_paused(session, event))
        await session.send("Fetch.enable", {"patterns": [
            {"urlPattern": "*", "requestStage": "Request"},
            # A document that arrives after a redirect never passed the route: its headers are set here.
            {"urlPattern": "*", "resourceType": "Document", "requestStage": "Response"}]})

    def _on_paused(self, session: Any, event: dict[str, Any]) -> None:
        if "responseStatusCode" in event or "responseErrorReason" in event:
            self._later(self._set_document_headers(session, event))
        else:
            self._later(self._decide_hop(session, event))

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
            rewritten = self._response_headers(headers, url, document=True) if ours else None
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
            logger.debug("allowed_domains: passing the document %s failed: %s", self._redact(url), self._redact(str(exc)))

    def _response_headers(self, headers: list[tuple[str, str]], url: str, *, document: bool) -> list[tuple[str, str]] | None:
        """The headers the browser gets for a response the guard lets through: a
        ``Speculation-Rules`` header taken out (the rule sets it names recorded), and a document's
        ``Connection-Allowlist`` set to the allowlist, replacing one the site sent (Chromium
        enforces only the first list); None when nothing changes."""
        kept: list[tuple[str, str]] = []
        for name, value in headers:
            lower = name.lower()
            if lower == RULES_HEADER:  # rules the remover never sees
                for rule_set in header_rule_sets(value, url):
                    self.record(rule_set, "speculation", "speculation-rules header")
            elif not (document and self._allowlist is not None and lower == ALLOWLIST_HEADER):
                kept.append((name, value))
        if document and self._allowlist is not None:
            kept.append((ALLOWLIST_HEADER, self._allowlist))
        return kept if kept != headers else None

    def _later(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _decide_hop(self, session: Any, event: dict[str, Any]) -> None:
        """Every request the browser sends, paused: one to another host from a frame of this
        context fails. Routes saw its first hop already; this catches the hops Playwright hands
        them no more (a redirect, or the fresh request a cross-origin ``fetch`` redirect becomes)."""
        request_id = event["requestId"]
        url = str(event.get("request", {}).get("url", ""))
        try:
            frame_id = str(event.get("frameId", ""))
            if self._installed and not self.allows(url) and await self._is_ours(session, frame_id):
                resource = str(event.get("resourceType", "")).lower()
                kind = "navigation" if resource == "document" else "request"
                if kind == "navigation" and frame_id in self._tabs and frame_id != self._main_frame_id:
                    kind, self._popup_blocked = "popup", True
                self.record(url, kind, resource)
                await session.send("Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"})
            else:
                await session.send("Fetch.continueRequest", {"requestId": request_id})
        except Exception as exc:  # the request or the browser went away meanwhile
            logger.debug("allowed_domains: deciding on %s failed: %s", self._redact(url), self._redact(str(exc)))

    async def _is_ours(self, session: Any, frame_id: str) -> bool:
        """Whether ``frame_id`` is a frame of this guard's context (the browser-level session sees
        every context). Looked up only for requests to another host; a request with no frame (a
        service worker's) counts as ours: blocking it is the safe side. A page's own session sees
        that page's requests only."""
        if session is not self._hops or not frame_id or self._context_id is None or frame_id in self._frames:
            return True
        targets = (await session.send("Target.getTargets")).get("targetInfos", [])
        ours = [t for t in targets if t.get("browserContextId") == self._context_id]
        self._tabs = {str(t["targetId"]) for t in ours if t.get("type") == "page"}
        frames = {str(t["targetId"]) for t in ours}  # pages and out-of-process frames: their ids are frame ids
        if frame_id not in frames:
            for page_session in list(self._page_sessions.values()):  # same-process frames
                try:
                    # A page in the middle of a navigation may not answer: bounded, and ours if unsure.
                    tree = await asyncio.wait_for(page_session.send("Page.getFrameTree"), _FRAME_TREE_TIMEOUT)
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

    # --- each page: speculation rules removed, prerendering off, attempts recorded -----------

    async def _watch_page(self, page: Any, *, opened: bool = False) -> None:
        if page in self._page_sessions or page.is_closed():
            return
        try:
            session = await self._context.new_cdp_session(page)
            self._page_sessions[page] = session
            session.on("Preload.prefetchStatusUpdated", lambda e: self._on_speculation(e, "prefetch"))
            session.on("Preload.prerenderStatusUpdated", lambda e: self._on_speculation(e, "prerender"))
            session.on("Runtime.bindingCalled", self._on_rules_removed)
            session.on("Page.frameNavigated", lambda e: self._on_error_page(page, e.get("frame", {})))
            page.on("framenavigated", self._on_frame_navigated)
            await session.send("Page.enable")
            if opened:  # a new tab the header refused shows its error page before the guard attaches to it
                self._on_error_page(page, (await session.send("Page.getFrameTree"))["frameTree"]["frame"])
            await session.send("Page.setPrerenderingAllowed", {"isAllowed": False})
            await session.send("Runtime.enable")  # a binding reaches an isolated world only with Runtime on
            await session.send("Runtime.addBinding", {"name": SPECULATION_BINDING, "executionContextName": SPECULATION_WORLD})
            await session.send("Page.addScriptToEvaluateOnNewDocument", {
                "source": REMOVER_SOURCE, "worldName": SPECULATION_WORLD, "runImmediately": True})
            await session.send("Preload.enable")
            self._tabs.add(str((await session.send("Target.getTargetInfo"))["targetInfo"].get("targetId", "")))
            if self._hops_per_page:
                await self._intercept(session)
        except Exception as exc:  # a page closing meanwhile, or a browser without these commands
            logger.warning("allowed_domains: cannot watch the page %s (speculative loads, redirect hops): %s",
                           self._redact(page.url), self._redact(str(exc)))

    def _on_error_page(self, page: Any, frame: dict[str, Any]) -> None:
        """A frame showing the browser's error page for an address outside the allowlist. A load the
        header refused reaches no route and gives no failed-request event (a navigation, a frame, a
        new tab): counted here, and recorded unless the route or the interception recorded it."""
        url, loader = str(frame.get("unreachableUrl") or ""), str(frame.get("loaderId", ""))
        if not url or not self._installed or self.allows(url) or loader in self._error_pages:
            return
        self._error_pages.add(loader)
        origin = _origin(url)
        self._error_page_count[origin] += 1
        if self._error_page_count[origin] <= self._document_blocks[origin]:
            return  # blocked by the route or the interception, and recorded there
        kind = "navigation" if frame.get("parentId") or page is self._main_page else "popup"
        self.record(url, kind, "document")
        if kind == "popup":
            self._popup_blocked = True

    def _on_frame_navigated(self, frame: Any) -> None:
        # A cross-site frame's error page is an out-of-process frame: its own DevTools target.
        if self._installed and frame.parent_frame is not None and frame.url.startswith("chrome-error:"):
            self._later(self._read_frame_error(frame))

    async def _read_frame_error(self, frame: Any) -> None:
        try:
            session = await self._context.new_cdp_session(frame)
        except Exception:
            return  # a frame of its parent's process: its page's session reported it
        try:
            tree = await session.send("Page.getFrameTree")
            self._on_error_page(frame.page, {**tree["frameTree"]["frame"], "parentId": "child"})
        except Exception as exc:  # the frame went away meanwhile
            logger.debug("allowed_domains: reading a frame's error page failed: %s", self._redact(str(exc)))
        finally:
            try:
                await session.detach()
            except Exception as exc:
                logger.debug("allowed_domains: detaching a frame's DevTools session failed: %s", exc)

    def _on_rules_removed(self, event: dict[str, Any]) -> None:
        if event.get("name") != SPECULATION_BINDING:
            return
        # Every rule set is removed, also one that lists allowed addresses only: the browser follows
        # a prefetch's redirects itself, unchecked. Addresses outside the allowlist are recorded.
        targets = speculation_targets(str(event.get("payload", "")))
        for action, url in targets:
            self._record_speculation(url, action)
        logger.info("allowed_domains: removed a speculation rule set asking for %s",
                    self._redact(", ".join(url for _, url in targets) or "no listed address"))

    def _on_speculation(self, event: dict[str, Any], what: str) -> None:
        url = str(event.get("prefetchUrl") or event.get("key", {}).get("url") or "")
        if not self._record_speculation(url, what):
            return
        # A rule set the remover could not reach (docs/security.md). Chromium sends the prefetch
        # (a prerender begins with one) from the browser process, past every route and DevTools
        # interception of this guard; the document's Connection-Allowlist refuses it there.
        if self._allowlist is not None:
            logger.info("allowed_domains: the page asked the browser to %s %s, outside the allowlist, with rules the "
                        "guard could not remove; the browser refuses it (Connection-Allowlist)", what, self._redact(url))
        else:
            logger.warning("allowed_domains: the page asked the browser to %s %s, outside the allowlist, with rules "
                           "the guard could not remove; the prerender is refused but this browser sends the prefetch",
                           what, self._redact(url))

    def _record_speculation(self, url: str, what: str) -> bool:
        """Record a speculative load to another host once per address; whether it was new."""
        if not url or self.allows(url) or any(b.url == url and b.kind == "speculation" for b in self.blocked):
            return False
        self.record(url, "speculation", what)
        return True

    async def _stop_watching(self) -> None:
        for session in self._page_sessions.values():  # a document that outlives the guard keeps its rules again
            try:
                tree = await asyncio.wait_for(session.send("Page.getFrameTree"), _FRAME_TREE_TIMEOUT)
                world = await session.send("Page.createIsolatedWorld", {
                    "frameId": tree["frameTree"]["frame"]["id"], "worldName": SPECULATION_WORLD})
                await session.send("Runtime.evaluate", {"expression": STOP_SOURCE,
                                                        "contextId": world["executionContextId"]})
            except Exception as exc:  # the page closed or is navigating away
                logger.debug("allowed_domains: ending the speculation-rules remover failed: %s", exc)
        for page in self._page_sessions:
            page.remove_listener("framenavigated", self._on_frame_navigated)
        sessions = [self._hops, *self._page_sessions.values()]
        self._hops = None
        self._page_sessions.clear()
        for task in list(self._pending):
            await asyncio.gather(task, return_exceptions=True)
        for session in sessions:
            if session is None:
                continue
            try:
                await session.detach()  # also ends its Fetch interception and the prerendering switch
            except Exception as exc:  # the browser or the page is gone already
                logger.debug("allowed_domains: detaching a DevTools session failed: %s", exc)

    async def _pass_checking_redirects(self, route: Any, request: Any) -> None:
        parts = url_parts(request.url)
        if parts is None or parts.scheme not in ("http", "https"):
            await route.fallback()  # nothing to redirect
            return
        try:
            response = await route.fetch(max_redirects=0)
        except Exception as exc:  # the network failed: let the browser see the same failure
            logger.debug("allowed_domains: fetching %s failed: %s", self._redact(request.url), self._redact(str(exc)))
            await route.abort("failed")
            return
        location = response.headers.get("location")
        if 300 <= response.status < 400 and location:
            target = resolve_url(request.url, location)
            if target is None or not self.allows(target):
                await self._block(route, request, target or location)
                return
        headers = self._response_headers(list(response.headers.items()), request.url,
                                         document=request.resource_type == "document")
        if headers is not None:
            await route.fulfill(response=response, headers=dict(headers))
            return
        await route.fulfill(response=response)

    async def _block(self, route: Any, request: Any, url: str) -> None:
        self._record_request(request, url)
        await route.abort("blockedbyclient")

    def _on_request_failed(self, request: Any) -> None:
        """A connection the browser refused by the document's ``Connection-Allowlist``: it never
        reached a route or the DevTools interception, so it is recorded from here."""
        if self._installed and request.failure == _REFUSED_BY_ALLOWLIST and not self.allows(request.url):
            self._record_request(request, request.url)

    def _record_request(self, request: Any, url: str) -> None:
        kind = "request"
        if request.is_navigation_request():
            try:
                frame = request.frame
            except Exception:
                # A new tab's first navigation has no frame yet: Playwright refuses to give one.
                kind = "popup"
            else:
                is_main_frame = frame.parent_frame is None
                kind = "popup" if is_main_frame and frame.page is not self._main_page else "navigation"
        self.record(url, kind, request.resource_type)
        if kind == "popup":
            self._popup_blocked = True

    def _on_page(self, page: Any) -> None:
        self._popups.append(page)
        if self._installed:
            self._later(self._watch_page(page, opened=True))

    async def sweep(self) -> None:
        """Close the tabs that were opened to a blocked address (they show an error or a blank page)."""
        if not self._popup_blocked:
            return
        self._popup_blocked = False
        blocked_urls = {b.url for b in self.blocked if b.kind == "popup"}
        for page in self._popups:
            if page is self._main_page or page.is_closed():
                continue
            if page.url in blocked_urls or page.url == "about:blank" or page.url.startswith("chrome-error:"):
                try:
                    await page.close()
                except Exception as exc:  # already closed
                    logger.debug("allowed_domains: closing blocked popup failed: %s", exc)
