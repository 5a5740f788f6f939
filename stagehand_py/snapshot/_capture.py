"""Capturing a page over CDP: the I/O half of the snapshot engine.

Per CDP target (the page, and every out-of-process iframe) we fetch the DOM tree once
(``DOM.getDocument``, full depth, piercing shadow roots and same-process iframes) and run
``_walker.js`` once per document in that tree. All of those calls run concurrently. The walker
answers role, name (our own ARIA rules, ``_aria.js``), visibility and state for every element
from inside the page, where it is cheap, the same whoever launched the browser. Only when the
page changed between the two reads do we ask ``Accessibility.getFullAXTree`` for that unit.
Closed shadow roots found here are handed to the action resolver's store in the page.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from .._actions._resolve import closed_root_recorder
from .._errors import CDPError, ElementNotFoundError, InvalidArgumentError, PageClosedError, SnapshotError
from .._logging import logger
from .._vision._confidence import measure_over_cdp
from ..browser._cdp import CDPSession, PageTargets, loads_json
from ._aria import with_aria
from ._model import Snapshot
from ._outline import TARGET_INFO_KEY, TEXT_INDEX_KEY, VISIBLE, ElementInfo, build_outline

__all__ = ["FrameOrdinals", "capture_snapshot"]

_GROUP = "stagehand-snapshot"
_STRIDE = 6  # values per element in the walker's answer
_ELEMENT, _DOCUMENT, _FRAGMENT = 1, 9, 11
_FRAME_TAGS = ("iframe", "frame")
#: Depth per request once a full-depth DOM.getDocument has been refused for being too deep.
_PARTIAL_DEPTH = 100
#: AX-ignored reasons that mean "not on screen / not for assistive tech" (fallback path only).
_HIDDEN_AX_REASONS = frozenset({"notRendered", "ariaHiddenElement", "ariaHiddenSubtree", "inertElement", "inertSubtree"})


@cache
def _walker_source() -> str:
    source = resources.files(__package__).joinpath("_walker.js").read_text(encoding="utf-8")
    return with_aria(source.strip())


_XPATH_OF_JS = """function () {
  const step = (n) => {
    if (n.nodeType === 3) {
      let k = 0;
      for (let s = n.parentNode.firstChild; s; s = s.nextSibling) {
        if (s.nodeType === 3 && s.nodeValue.trim()) k++;
        if (s === n) break;
      }
      return 'text()[normalize-space()][' + k + ']';
    }
    let k = 0;
    for (let s = n.parentNode.firstElementChild; s; s = s.nextElementSibling) {
      if (s.localName === n.localName) k++;
      if (s === n) break;
    }
    const html = n.namespaceURI === 'http://www.w3.org/1999/xhtml';
    return html ? n.localName + '[' + k + ']' : "*[local-name()='" + n.localName + "'][" + k + ']';
  };
  let path = '';
  let n = this;
  while (n && n.nodeType !== 9) {
    const parent = n.parentNode;
    if (!parent) break;
    path = '/' + step(n) + path;
    if (parent.nodeType === 11) { path = '/' + path; n = parent.host; } else { n = parent; }
  }
  return [path, this.baseURI || ''];
}"""

_LOCATE_JS = """(sel, kind) => {
  if (kind === 'css') return document.querySelector(sel);
  const r = document.evaluate(sel, document, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null);
  return r.snapshotLength ? r.snapshotItem(0) : null;
}"""


class FrameOrdinals:
    """Stable small numbers for frames: the main frame is 0, each new frame the next number.

    Kept for the lifetime of a page so an element's id never changes between snapshots.
    """

    def __init__(self) -> None:
        self._ordinals: dict[str, int] = {}

    def __call__(self, frame_id: str) -> int:
        ordinal = self._ordinals.get(frame_id)
        if ordinal is None:
            ordinal = self._ordinals[frame_id] = len(self._ordinals) + 1
        return ordinal


@dataclass
class _TargetWork:
    """Everything captured from one CDP target."""

    session: CDPSession
    root: dict[str, Any]
    info: dict[int, ElementInfo] = field(default_factory=dict)


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


async def _get_tree(session: CDPSession, *, backend_node_id: int | None = None, object_id: str | None = None) -> dict[str, Any]:
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


@dataclass(frozen=True, slots=True)
class _Unit:
    """One walker call: a document, a closed shadow root, or the scoped element.

    Page script cannot enter a closed shadow root, so each one is walked on its own, started
    from the root object CDP hands us.
    """

    root: dict[str, Any]
    frame_id: str | None  # for the accessibility-tree fallback


def _units_and_remote_frames(root: dict[str, Any]) -> tuple[list[_Unit], list[dict[str, Any]]]:
    """Split one target's tree into walker units and out-of-process iframe owners."""
    units: list[_Unit] = []
    remote_frames: list[dict[str, Any]] = []
    pending: list[tuple[dict[str, Any], str | None]] = [(root, None)]
    while pending:
        unit_root, frame_id = pending.pop()
        units.append(_Unit(unit_root, frame_id))
        stack = [unit_root]
        while stack:
            node = stack.pop()
            for shadow in node.get("shadowRoots", ()):
                kind = shadow.get("shadowRootType")
                if kind == "closed":
                    pending.append((shadow, frame_id))
                elif kind != "user-agent":
                    stack.append(shadow)
            stack.extend(node.get("children", ()))
            if node.get("localName") in _FRAME_TAGS:
                content = node.get("contentDocument")
                if content is not None:
                    pending.append((content, node.get("frameId")))
                elif node.get("frameId"):
                    remote_frames.append(node)
    return units, remote_frames


def _walk_order(root: dict[str, Any]) -> list[dict[str, Any]]:
    """Elements of one unit in the walker's order: element, open-shadow children, light children."""
    out: list[dict[str, Any]] = []
    stack = [root] if root.get("nodeType") == _ELEMENT else list(reversed(root.get("children", ())))
    while stack:
        node = stack.pop()
        if node.get("nodeType") != _ELEMENT:
            continue
        out.append(node)
        shadow_children: list[dict[str, Any]] = []
        for shadow in node.get("shadowRoots", ()):
            if shadow.get("shadowRootType") == "open":
                shadow_children.extend(shadow.get("children", ()))
        stack.extend(reversed(node.get("children", ())))
        stack.extend(reversed(shadow_children))
    return out


def _walker_result(reply: dict[str, Any]) -> list[Any]:
    if "exceptionDetails" in reply:
        details = reply["exceptionDetails"]
        raise SnapshotError(
            f"The snapshot walker failed in the page: {details.get('text', '')} {details.get('exception', {}).get('description', '')}"
        )
    flat: list[Any] = loads_json(reply["result"].get("value") or "[]")
    return flat


async def _run_walker(session: CDPSession, object_id: str) -> list[Any]:
    reply = await session.send(
        "Runtime.callFunctionOn",
        {"functionDeclaration": _walker_source(), "objectId": object_id, "returnByValue": True},
    )
    return _walker_result(reply)


async def _walk_main_document(session: CDPSession) -> list[Any]:
    """Walk the target's own document without waiting for the DOM tree (they run side by side)."""
    reply = await session.send("Runtime.evaluate", {"expression": f"({_walker_source()}).call(document)", "returnByValue": True})
    return _walker_result(reply)


async def _record_closed_root(session: CDPSession, object_id: str) -> None:
    """Hand a closed shadow root we found over CDP to the action resolver's store in the page.

    Roots attached after the Stagehand was created are recorded by its attachShadow hook; this
    covers those that existed before (a page the user loaded, then wrapped), so every element
    the outline shows can be acted on.
    """
    reply = await session.send(
        "Runtime.callFunctionOn",
        {"functionDeclaration": closed_root_recorder(), "objectId": object_id, "returnByValue": True},
    )
    if "exceptionDetails" in reply:
        logger.debug("could not record a closed shadow root for the resolver: %s", reply["exceptionDetails"].get("text"))


async def _walk_unit(
    session: CDPSession, unit: _Unit, info: dict[int, ElementInfo], *, prefetched: asyncio.Future[list[Any]] | None = None
) -> None:
    """Run the walker on one unit and merge what it says into ``info``."""
    if prefetched is not None:
        flat = await prefetched
    else:
        resolved = await session.send("DOM.resolveNode", {"backendNodeId": unit.root["backendNodeId"], "objectGroup": _GROUP})
        object_id = resolved["object"]["objectId"]
        if unit.root.get("shadowRootType") == "closed":
            flat, _ = await asyncio.gather(_run_walker(session, object_id), _record_closed_root(session, object_id))
        else:
            flat = await _run_walker(session, object_id)
    elements = _walk_order(unit.root)
    aligned = len(flat) == _STRIDE * len(elements) and all(
        flat[_STRIDE * i] == (el.get("localName") or el.get("nodeName", "").lower()) for i, el in enumerate(elements)
    )
    if aligned:
        for i, el in enumerate(elements):
            base = _STRIDE * i
            info[el["backendNodeId"]] = (flat[base + 1], flat[base + 2], flat[base + 3], flat[base + 4])
            if flat[base + 5] is not None:
                el[TEXT_INDEX_KEY] = flat[base + 5]
    else:
        # The page changed between the two reads: trust Chrome's accessibility tree for this
        # unit rather than guess.
        logger.debug("walker and DOM tree disagree (%d vs %d elements); using the AX tree", len(flat) // _STRIDE, len(elements))
        await _merge_ax_tree(session, unit.frame_id, info, keep_visibility=False)


async def _merge_ax_tree(session: CDPSession, frame_id: str | None, info: dict[int, ElementInfo], *, keep_visibility: bool) -> None:
    params = {"frameId": frame_id} if frame_id else {}
    try:
        nodes = (await session.send("Accessibility.getFullAXTree", params))["nodes"]
    except CDPError as exc:
        logger.debug("Accessibility.getFullAXTree failed for frame %s: %s", frame_id, exc)
        return
    for node in nodes:
        backend = node.get("backendDOMNodeId")
        if backend is None:
            continue
        role = (node.get("role") or {}).get("value", "")
        name = (node.get("name") or {}).get("value", "")
        if keep_visibility and backend in info:
            bits, _, _, value = info[backend]
            info[backend] = (bits, "none" if node.get("ignored") else role, name, value)
            continue
        hidden = node.get("ignored") and any(r.get("name") in _HIDDEN_AX_REASONS for r in node.get("ignoredReasons", ()))
        info[backend] = (0 if hidden else VISIBLE, "none" if node.get("ignored") else role, name, None)


async def _capture_target(
    targets: PageTargets,
    session: CDPSession,
    root: dict[str, Any],
    remote_sessions: dict[str, CDPSession],
    info: dict[int, ElementInfo],
    *,
    prefetched: asyncio.Future[list[Any]] | None = None,
) -> bool:
    """Walk every unit of one target and, concurrently, capture its out-of-process frames.

    ``prefetched`` is the walk of ``root`` itself when it was started before the tree arrived.
    Returns True when remote objects were made on ``session`` (the caller frees them).
    """
    units, remote_frames = _units_and_remote_frames(root)

    async def remote(owner: dict[str, Any]) -> None:
        child_session = remote_sessions.get(owner["frameId"])
        if child_session is None:
            return  # a frame still loading, or gone: it shows as an empty iframe line
        try:
            child_root = await _get_tree(child_session)
        except PageClosedError:
            return  # navigated away or detached meanwhile
        owner["contentDocument"] = child_root
        # Backend node ids are per renderer process: an out-of-process frame gets its own map.
        child_info: dict[int, ElementInfo] = {}
        child_root[TARGET_INFO_KEY] = child_info
        try:
            await _capture_target(targets, child_session, child_root, remote_sessions, child_info)
        finally:
            await _release(child_session)

    await asyncio.gather(
        *(_walk_unit(session, unit, info, prefetched=prefetched if unit.root is root else None) for unit in units),
        *(remote(owner) for owner in remote_frames),
    )
    return prefetched is None or len(units) > 1


async def capture_snapshot(
    targets: PageTargets, ordinals: FrameOrdinals, *, selector: str | None = None, confidence: bool = False
) -> Snapshot:
    """Capture the page (or the subtree ``selector`` points to) into a :class:`Snapshot`.

    ``confidence=True`` also measures the DOM-confidence score (see :mod:`stagehand_py._vision`)
    right after the walk.
    """
    started = time.perf_counter()
    main = targets.main
    info: dict[int, ElementInfo] = {}
    prefetched: asyncio.Future[list[Any]] | None = None
    scope_object: str | None = None
    dom_confidence: float | None = None
    made_objects = False
    try:
        if selector is None:
            # The page's own walk does not need the DOM tree: start it first, fetch the tree meanwhile.
            prefetched = asyncio.ensure_future(_walk_main_document(main))
            root, remote_sessions = await asyncio.gather(_get_tree(main), targets.oopif_sessions())
            root_xpath, base_url = "", root.get("baseURL") or root.get("documentURL") or ""
        else:
            scope_object = await _locate(main, selector)
            (root, (root_xpath, base_url)), remote_sessions = await asyncio.gather(
                _scoped_tree(main, scope_object), targets.oopif_sessions()
            )
        made_objects = await _capture_target(targets, main, root, remote_sessions, info, prefetched=prefetched)
        if confidence:
            dom_confidence = (await measure_over_cdp(main, object_id=scope_object)).score
    finally:
        if prefetched is not None and not prefetched.done():
            prefetched.cancel()
        if scope_object is not None or made_objects:
            await _release(main)
    result = build_outline(root, info=info, frame_ordinal=ordinals, root_ordinal=0, root_xpath=root_xpath, base_url=base_url)
    url = targets.page.url if targets.page is not None else ""
    logger.debug("snapshot of %s: %d elements, %d chars in %.0f ms", url, len(info), len(result.tree), (time.perf_counter() - started) * 1000)
    return Snapshot(result.tree, result.xpath_map, result.url_map, url, dom_confidence=dom_confidence)


async def _scoped_tree(session: CDPSession, object_id: str) -> tuple[dict[str, Any], tuple[str, str]]:
    tree, where = await asyncio.gather(
        _get_tree(session, object_id=object_id),
        session.send("Runtime.callFunctionOn", {"functionDeclaration": _XPATH_OF_JS, "objectId": object_id, "returnByValue": True}),
    )
    path, base = where["result"]["value"]
    return tree, (path, base)


async def _locate(session: CDPSession, selector: str) -> str:
    """Resolve ``selector`` (XPath or CSS) in the main frame to a remote object id."""
    raw = selector.strip()
    if not raw:
        raise InvalidArgumentError("selector is empty; pass an XPath ('xpath=/html/body/main' or '//main') or a CSS selector ('css=main' or 'main').")
    if raw.startswith("xpath="):
        kind, expr = "xpath", raw[len("xpath="):]
    elif raw.startswith("css="):
        kind, expr = "css", raw[len("css="):]
    elif raw.startswith(("/", "(")):
        kind, expr = "xpath", raw
    else:
        kind, expr = "css", raw
    reply = await session.send(
        "Runtime.evaluate",
        {"expression": f"({_LOCATE_JS})({json.dumps(expr)}, {json.dumps(kind)})", "objectGroup": _GROUP},
    )
    if "exceptionDetails" in reply:
        detail = reply["exceptionDetails"].get("exception", {}).get("description") or reply["exceptionDetails"].get("text", "")
        raise InvalidArgumentError(f"selector {selector!r} is not a valid {kind.upper()} expression: {detail}")
    result = reply["result"]
    if result.get("subtype") == "null" or "objectId" not in result:
        raise ElementNotFoundError(f"selector {selector!r} matches no element in the main frame, so there is nothing to snapshot.", selector=selector)
    object_id: str = result["objectId"]
    return object_id


async def _release(session: CDPSession) -> None:
    try:
        await session.send("Runtime.releaseObjectGroup", {"objectGroup": _GROUP})
    except (CDPError, PageClosedError):
        pass  # the page is gone, and its objects with it
