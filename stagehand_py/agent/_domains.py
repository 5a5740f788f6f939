"""``allowed_domains``: glob patterns checked for every navigation, request and new tab.

Enforcement is a ``context.route("**/*")`` handler, so it covers the main page, frames,
fetch/XHR, subresources and popups alike (Playwright routes apply to every page of the
context), plus a ``context.route_web_socket`` handler for WebSockets. A blocked request is
aborted as ``blockedbyclient``, recorded, and a popup that was opened to a blocked address is
closed.

Redirects: the browser follows a redirect without asking routes again, so an allowed URL that
answers ``302 Location: <another host>`` would carry the request there. The guard therefore
fetches allowed requests itself without following redirects (``route.fetch(max_redirects=0)``):
a redirect to an allowed address is handed to the browser, which asks again for the next hop
(and the guard sees it); a redirect elsewhere is blocked. Responses are buffered on the way
(a streamed response arrives whole). A ``page.route`` the caller installed still runs first; a
``context.route`` installed before the guard no longer sees allowed requests.

Patterns: ``"example.com"`` (that host), ``"*.example.com"`` (subdomains only),
``"127.0.0.1:8080"`` (host and port), ``"https://*.example.com"`` (scheme too). ``data:``,
``blob:`` and ``about:`` URLs are always allowed: they load nothing from the network.
"""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urljoin, urlsplit

from .._errors import InvalidArgumentError
from ._types import BlockedRequest

__all__ = ["DomainGuard", "url_allowed"]

logger = logging.getLogger("stagehand_py")

_LOCAL_SCHEMES = ("data", "blob", "about", "chrome-error")


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
    return scheme, _normal_host(rest), port


def _normal_host(host: str) -> str:
    """A host as the network sees it: lower case, no trailing dot, each international label in
    its ASCII (punycode) form, so 'Bücher.example.' and 'xn--bcher-kva.example' are one host."""
    labels = host.strip().lower().rstrip(".").split(".")
    out = []
    for label in labels:
        if label.isascii() or "*" in label:
            out.append(label)
            continue
        try:
            out.append(label.encode("idna").decode("ascii"))
        except UnicodeError:
            out.append(label)  # not a valid IDN label: compared as written (it matches nothing real)
    return ".".join(out)


def url_allowed(url: str, patterns: Sequence[str]) -> bool:
    """Whether ``url`` matches one of the glob ``patterns`` (see the module docstring)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return False
    scheme = parts.scheme.lower()
    if scheme in _LOCAL_SCHEMES:
        return True
    host = _normal_host(parts.hostname or "")
    effective_port = str(port) if port is not None else {"http": "80", "https": "443"}.get(scheme, "")
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
        self._redact = redact  # a blocked URL may carry a secret (a GET form): logs get it redacted
        self._main_page = main_page
        self._context = main_page.context
        self.blocked: list[BlockedRequest] = []
        self._unread = 0
        self._installed = False
        self._popups: list[Any] = []
        self._popup_blocked = False

    def allows(self, url: str) -> bool:
        return url_allowed(url, self.patterns)

    async def install(self) -> None:
        await self._context.route("**/*", self._handle)
        await self._context.route_web_socket(lambda url: True, self._handle_web_socket)
        self._context.on("page", self._on_page)
        self._installed = True

    async def uninstall(self) -> None:
        if not self._installed:
            return
        self._installed = False
        self._context.remove_listener("page", self._on_page)
        await self.sweep()
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
        item = BlockedRequest(url=url, kind=kind, resource_type=resource_type)
        self.blocked.append(item)
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
        if self.allows(url):
            await self._pass_checking_redirects(route, request)
            return
        await self._block(route, request, url)

    async def _pass_checking_redirects(self, route: Any, request: Any) -> None:
        if urlsplit(request.url).scheme not in ("http", "https"):
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
            target = urljoin(request.url, location)
            if not self.allows(target):
                await self._block(route, request, target)
                return
        await route.fulfill(response=response)

    async def _block(self, route: Any, request: Any, url: str) -> None:
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
        await route.abort("blockedbyclient")

    def _on_page(self, page: Any) -> None:
        self._popups.append(page)

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
