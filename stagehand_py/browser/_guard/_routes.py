"""Enforcement at the context's routes: every request and WebSocket of every page of the context
passes ``context.route("**/*")`` / ``route_web_socket``; one to another host is aborted as
``blockedbyclient`` and recorded.

An allowed request is fetched here without following redirects (``route.fetch(max_redirects=0)``),
and a first ``Location`` elsewhere is blocked, resolved by the WHATWG URL rules (where
``/\\evil.example/`` is ``//evil.example/``); later hops never reach a route (``_hops``). Responses
pass through buffered (a streamed response arrives whole); a ``page.route`` the caller installed
still runs first; a ``context.route`` installed before the guard no longer sees allowed requests.
Connections a document's ``Connection-Allowlist`` made the browser refuse before any route saw
them are recorded from the context's failed-request events.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from ..._types import BlockedKind
from ..._util import resolve_url, url_parts
from ._scope import GuardScope
from ._speculation import rewrite_headers

__all__ = ["RouteCheck"]

logger = logging.getLogger("stagehand_py")

#: How Chromium fails a connection a document's ``Connection-Allowlist`` refuses.
_REFUSED_BY_ALLOWLIST = "net::ERR_NETWORK_ACCESS_REVOKED"


class RouteCheck:
    def __init__(self, scope: GuardScope) -> None:
        self._scope = scope

    async def install(self) -> None:
        context = self._scope.context
        await context.route("**/*", self._handle)
        await context.route_web_socket(lambda url: True, self._handle_web_socket)
        context.on("requestfailed", self.on_request_failed)

    async def uninstall(self) -> None:
        context = self._scope.context
        with contextlib.suppress(KeyError):  # an install that failed before adding it
            context.remove_listener("requestfailed", self.on_request_failed)
        try:
            await context.unroute("**/*", self._handle)
            # Playwright has no unroute for WebSockets: the handler lets everything through
            # once the guard is uninstalled.
        except Exception as exc:  # the context may be closed already
            logger.debug("allowed_domains: unroute failed: %s", exc)

    async def _handle_web_socket(self, ws: Any) -> None:
        if not self._scope.installed or self._scope.allows(ws.url):
            ws.connect_to_server()
            return
        self._scope.log.record(ws.url, "request", "websocket")
        await ws.close(code=1008, reason="blocked by allowed_domains")

    async def _handle(self, route: Any, request: Any) -> None:
        url = request.url
        if not self._scope.allows(url):
            await self._block(route, request, url)
        else:
            # Fetched here, not handed on: a worker whose script came through a fulfilled
            # response cannot open a WebSocket past the guard (measured: with the request simply
            # continued, a worker's WebSocket to another host connects).
            await self._pass_checking_redirects(route, request)

    async def _pass_checking_redirects(self, route: Any, request: Any) -> None:
        parts = url_parts(request.url)
        if parts is None or parts.scheme not in ("http", "https"):
            await route.fallback()  # nothing to redirect
            return
        try:
            response = await route.fetch(max_redirects=0)
        except Exception as exc:  # the network failed: let the browser see the same failure
            logger.debug("allowed_domains: fetching %s failed: %s", self._scope.redact(request.url),
                         self._scope.redact(str(exc)))
            await route.abort("failed")
            return
        location = response.headers.get("location")
        if 300 <= response.status < 400 and location:
            target = resolve_url(request.url, location)
            if target is None or not self._scope.allows(target):
                await self._block(route, request, target or location)
                return
        headers = rewrite_headers(self._scope, list(response.headers.items()), request.url,
                                  document=request.resource_type == "document")
        if headers is not None:
            await route.fulfill(response=response, headers=dict(headers))
            return
        await route.fulfill(response=response)

    async def _block(self, route: Any, request: Any, url: str) -> None:
        self._record_request(request, url)
        await route.abort("blockedbyclient")

    def on_request_failed(self, request: Any) -> None:
        """A connection the browser refused by the document's ``Connection-Allowlist``: it never
        reached a route or the DevTools interception, so it is recorded from here."""
        if self._scope.installed and request.failure == _REFUSED_BY_ALLOWLIST and not self._scope.allows(request.url):
            self._record_request(request, request.url)

    def _record_request(self, request: Any, url: str) -> None:
        kind: BlockedKind = "request"
        if request.is_navigation_request():
            try:
                frame = request.frame
            except Exception:
                # A new tab's first navigation has no frame yet: Playwright refuses to give one.
                kind = "popup"
            else:
                is_main_frame = frame.parent_frame is None
                kind = "popup" if is_main_frame and frame.page is not self._scope.main_page else "navigation"
        self._scope.log.record(url, kind, request.resource_type)
