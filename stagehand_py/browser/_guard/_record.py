"""The record of what a guard refused: each blocked navigation, request, new tab and speculative
load once, its URL redacted in the log, and the tally that tells a refusal the browser made unseen
(an error page no route recorded) from one already recorded."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

from ..._types import BlockedKind, BlockedRequest
from ..._util import url_parts

__all__ = ["BlockedLog"]

logger = logging.getLogger("stagehand_py")


def _origin(url: str) -> str:
    parts = url_parts(url)
    return f"{parts.scheme}://{parts.host}:{parts.port}" if parts is not None else url


class BlockedLog:
    """Every block of one guard, in order. ``redact`` hides secret values (in every URL encoding)
    in what is logged: a blocked URL may carry one (a GET form)."""

    def __init__(self, redact: Callable[[str], str] = lambda text: text) -> None:
        self.redact = redact
        self.items: list[BlockedRequest] = []
        #: A new tab was refused since the last sweep (the guard closes such tabs).
        self.popup_blocked = False
        # Error pages for addresses outside the allowlist, and the documents blocked and recorded, per
        # origin (an error page after a redirect shows the origin only): an error page beyond those
        # records is a load the header refused unseen.
        self._error_pages: set[str] = set()  # loader ids already counted
        self._error_page_count: Counter[str] = Counter()
        self._document_blocks: Counter[str] = Counter()

    def record(self, url: str, kind: BlockedKind, resource_type: str = "") -> BlockedRequest:
        parts = url_parts(url)
        item = BlockedRequest(url=parts.href if parts is not None else url, kind=kind, resource_type=resource_type)
        self.items.append(item)
        if kind in ("navigation", "popup") and resource_type == "document":
            self._document_blocks[_origin(item.url)] += 1
        if kind == "popup":
            self.popup_blocked = True
        logger.info("allowed_domains: blocked %s %s", kind, self.redact(url))
        return item

    def has_speculation(self, url: str) -> bool:
        return any(b.url == url and b.kind == "speculation" for b in self.items)

    def error_page(self, frame: dict[str, Any], *, main_page: bool) -> None:
        """A frame showing the browser's error page (``frame``: DevTools' ``Page.Frame``) for an
        address the caller found outside the allowlist. A load the header refused reaches no route
        and gives no failed-request event (a navigation, a frame, a new tab): counted here, and
        recorded unless the route or the interception recorded it."""
        url, loader = str(frame.get("unreachableUrl") or ""), str(frame.get("loaderId", ""))
        if loader in self._error_pages:
            return
        self._error_pages.add(loader)
        origin = _origin(url)
        self._error_page_count[origin] += 1
        if self._error_page_count[origin] <= self._document_blocks[origin]:
            return  # blocked by the route or the interception, and recorded there
        self.record(url, "navigation" if frame.get("parentId") or main_page else "popup", "document")
