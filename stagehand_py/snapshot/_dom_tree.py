"""The whole DOM of a CDP target (or of one node), however deep, piercing shadow roots and
frames: ``DOM.getDocument``/``DOM.describeNode`` with ``pierce=true``, fetched in slices when
one reply would nest too deep. Used only where the in-page walker cannot see: closed shadow
roots that existed before we arrived."""

from __future__ import annotations

import asyncio
from typing import Any

from .._errors import CDPError
from .._logging import logger
from ..browser._cdp import CDPSession

__all__ = ["full_dom_tree"]

_ELEMENT, _DOCUMENT, _FRAGMENT = 1, 9, 11
#: Depth per request once a full-depth DOM.getDocument has been refused for being too deep.
_PARTIAL_DEPTH = 100


def _is_too_deep(exc: CDPError) -> bool:
    text = str(exc).lower()
    return "stack limit" in text or "cbor" in text or "too deep" in text


async def _describe(session: CDPSession, depth: int, *, backend_node_id: int | None, object_id: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {"depth": depth, "pierce": True}
    if backend_node_id is None and object_id is None:
        return (await session.send("DOM.getDocument", params))["root"]  # type: ignore[no-any-return]
    if object_id is not None:
        params["objectId"] = object_id
    else:
        params["backendNodeId"] = backend_node_id
    return (await session.send("DOM.describeNode", params))["node"]  # type: ignore[no-any-return]


async def _sliced(session: CDPSession, depth: int, *, backend_node_id: int | None = None, object_id: str | None = None) -> tuple[dict[str, Any], int]:
    """One slice of at most ``depth`` levels, halving the depth while CDP refuses the message."""
    while True:
        try:
            return await _describe(session, depth, backend_node_id=backend_node_id, object_id=object_id), depth
        except CDPError as exc:
            if not _is_too_deep(exc) or depth <= 4:
                raise
            depth //= 2


async def full_dom_tree(session: CDPSession, *, backend_node_id: int | None = None, object_id: str | None = None) -> dict[str, Any]:
    """The full DOM tree of the target's document (or of one node), however deep it is.

    CDP serialises a reply through CBOR, which refuses nesting beyond roughly 145 elements
    ("CBOR: stack limit exceeded"). Then we fetch the tree in slices and stitch them.
    """
    try:
        return await _describe(session, -1, backend_node_id=backend_node_id, object_id=object_id)
    except CDPError as exc:
        if not _is_too_deep(exc):
            raise
        logger.debug("DOM too deep for one CDP message (%s); fetching it in slices", exc)
    root, depth = await _sliced(session, _PARTIAL_DEPTH, backend_node_id=backend_node_id, object_id=object_id)
    await _fill_in(session, root, depth)
    return root


async def _fill_in(session: CDPSession, root: dict[str, Any], depth: int) -> None:
    """Fetch the subtrees cut off at the depth limit, slice by slice, until none is left."""
    while True:
        cut: list[dict[str, Any]] = []
        stack = [root]
        while stack:
            node = stack.pop()
            children = node.get("children")
            if children is None and node.get("childNodeCount", 0) > 0 and node.get("nodeType") in (_ELEMENT, _FRAGMENT, _DOCUMENT):
                cut.append(node)
            stack.extend(children or ())
            stack.extend(node.get("shadowRoots", ()))
            if "contentDocument" in node:
                stack.append(node["contentDocument"])
        if not cut:
            return
        parts = await asyncio.gather(*(_sliced(session, depth, backend_node_id=n["backendNodeId"]) for n in cut))
        for node, (full, used) in zip(cut, parts, strict=True):
            depth = min(depth, used)
            node["children"] = full.get("children", [])
            for key in ("shadowRoots", "contentDocument"):
                if key in full:
                    node[key] = full[key]
