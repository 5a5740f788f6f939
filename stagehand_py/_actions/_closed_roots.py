"""Closed shadow roots opened to Playwright's utility world over DevTools, out of the page's reach.

Playwright's selector engines (its utility world, a JS world the page cannot reach) enter a
shadow root through ``host.shadowRoot``, which is null for a closed root in every world. DevTools
sees closed roots (``DOM.getDocument`` with ``pierce``), so we resolve each one into the utility
world of its frame and define ``shadowRoot`` on its host's wrapper *in that world* only: wrappers
and their properties are per world, so the page's scripts neither see the property nor can feed
another root in its place (the old record in the page's world, ``_shadow_init.js``, could be
pre-defined by a page). Identity comes from the DOM agent (backend node ids), never from page JS.
"""

from __future__ import annotations

import logging
from typing import Any

from playwright.async_api import CDPSession, Frame, Page
from playwright.async_api import Error as PlaywrightError

__all__ = ["closed_roots_in", "open_closed_roots"]

logger = logging.getLogger("stagehand_py._actions")

#: How the isolated worlds Playwright's selector engines run in are named in Chromium
#: (``__playwright_utility_world_page@<guid>``; only DevTools clients create isolated worlds).
UTILITY_WORLD_PREFIX = "__playwright_utility_world_"

# Runs in the utility world with ``this`` = the closed root: its built-ins are pristine there.
_OPEN_IN_WORLD_JS = "function () { Object.defineProperty(this.host, 'shadowRoot', {value: this, configurable: true}); }"


def closed_roots_in(root: dict[str, Any], root_frame: str) -> list[tuple[int, str]]:
    """(backend node id, frame id) of every closed shadow root in one target's pierced DOM tree."""
    found: list[tuple[int, str]] = []
    stack: list[tuple[dict[str, Any], str]] = [(root, root_frame)]
    while stack:
        node, frame_id = stack.pop()
        for shadow in node.get("shadowRoots", ()):
            if shadow.get("shadowRootType") == "closed":
                found.append((shadow["backendNodeId"], frame_id))
            stack.append((shadow, frame_id))
        stack.extend((child, frame_id) for child in node.get("children", ()))
        content = node.get("contentDocument")
        if content is not None:
            stack.append((content, node.get("frameId") or content.get("frameId") or frame_id))
    return found


async def _session_for(page: Page, frame: Frame) -> CDPSession:
    """The DevTools session of the target that renders ``frame`` (an out-of-process iframe has
    its own; a same-process one belongs to its parent's)."""
    current: Frame | None = frame
    while current is not None and current is not page.main_frame:
        try:
            return await page.context.new_cdp_session(current)
        except PlaywrightError:
            current = current.parent_frame
    return await page.context.new_cdp_session(page)


async def open_closed_roots(page: Page, frame: Frame) -> int:
    """Open every closed shadow root of the target rendering ``frame`` to Playwright's utility
    world; returns how many were opened. Roots that go away meanwhile are skipped."""
    session = await _session_for(page, frame)
    contexts: dict[str, list[int]] = {}

    def on_context(event: dict[str, Any]) -> None:
        context = event.get("context", {})
        aux = context.get("auxData", {})
        if str(context.get("name", "")).startswith(UTILITY_WORLD_PREFIX) and aux.get("frameId"):
            contexts.setdefault(aux["frameId"], []).append(context["id"])

    session.on("Runtime.executionContextCreated", on_context)
    opened = 0
    try:
        # Existing contexts are reported (as events, before the reply) when Runtime is enabled.
        await session.send("Runtime.enable")
        document = (await session.send("DOM.getDocument", {"depth": -1, "pierce": True}))["root"]
        root_frame = str((await session.send("Page.getFrameTree"))["frameTree"]["frame"]["id"])
        for backend_node_id, frame_id in closed_roots_in(document, root_frame):
            for context_id in contexts.get(frame_id, ()):
                try:
                    resolved = await session.send(
                        "DOM.resolveNode", {"backendNodeId": backend_node_id, "executionContextId": context_id}
                    )
                    await session.send(
                        "Runtime.callFunctionOn",
                        {"functionDeclaration": _OPEN_IN_WORLD_JS, "objectId": resolved["object"]["objectId"]},
                    )
                    opened += 1
                except PlaywrightError as exc:  # the root, its document or that world went away meanwhile
                    logger.debug("closed shadow root %s not opened: %s", backend_node_id, str(exc).splitlines()[0])
    finally:
        try:
            await session.detach()
        except PlaywrightError:
            pass  # the target is gone: nothing to detach
    return opened
