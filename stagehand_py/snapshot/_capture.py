"""Capturing a page: the I/O half of the snapshot engine.

One engine for every page, launched by us or by the user. Each frame's document is walked in
the page by ``_walker.js``, in the library's own isolated world (one ``Runtime.evaluate`` per
frame, all frames in parallel, out-of-process iframes through their own CDP target): the walker
computes visibility, state, ARIA roles and names (``_aria.js``) and numbers nodes with ids kept
in that world, so ids stay the same across snapshots of one document and the page can neither
see nor tamper with any of it. Python stitches the frames under their iframe lines and builds
the outline (``_outline.py``).

CDP is used only for what the page cannot tell: the frames and their owners, and closed shadow
roots that existed before we arrived. Those are found with ``DOM.getDocument(pierce=true)`` and
handed to the walker (and to the action resolver). That call moves the whole DOM (megabytes on a
big page, several times the walk's cost), so it is made only where the walker saw a possible host
of a closed root: on a document's first walk, and again when a new one appears (see
``_walker.js``: custom elements, and standard elements whose rendering does not match their light
DOM). A warm snapshot is two round trips per target: the frame tree, then the walks (the world's
execution context is kept per document).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, TypeVar

from .._actions._closed_roots import closed_roots_in
from .._errors import CDPError, ElementNotFoundError, InvalidArgumentError, PageClosedError, SnapshotError
from .._logging import logger
from ..browser._cdp import CDPSession, PageTargets, loads_json
from ._aria import with_aria
from ._confidence import measure_over_cdp
from ._dom_tree import full_dom_tree
from ._model import Snapshot
from ._outline import TARGET_INFO_KEY, ElementInfo, build_outline

__all__ = ["EngineMemory", "FrameOrdinals", "capture_element", "capture_snapshot", "element_backend_ids"]

T = TypeVar("T")

_GROUP = "stagehand-snapshot"
#: The isolated world's name: Chrome gives every caller asking for it in a frame the same world.
_WORLD = "stagehand_py"
_ELEMENT, _TEXT, _DOCUMENT, _FRAGMENT = 1, 3, 9, 11
_FRAME_TAGS = ("iframe", "frame")
#: The walker's store in our world (created by the walker or by whichever call comes first).
_STORE_KEY = "__stagehand_py_store__"
#: The sessions in which this capture made remote objects (our object group to release at the end).
_TOUCHED: ContextVar[dict[int, CDPSession]] = ContextVar("stagehand_snapshot_touched")


def _touch(session: CDPSession) -> None:
    touched = _TOUCHED.get(None)
    if touched is not None:
        touched[id(session)] = session


#: The store our world keeps per document: node ids (and nodes by id), closed roots found over
#: CDP (host -> root), iframe elements' frame ids, custom elements already looked into, and
#: whether the document's closed roots were looked for. Made by the first of our calls.
_STORE = (
    f"(Object.prototype.hasOwnProperty.call(globalThis, {_STORE_KEY!r}) ? globalThis[{_STORE_KEY!r}] : "
    f"(globalThis[{_STORE_KEY!r}] = {{ ids: new WeakMap(), nodes: new Map(), next: 1, closed: new WeakMap(), "
    "frames: new WeakMap(), seen: new WeakSet(), scanned: false }))"
)


@cache
def _walker_source() -> str:
    source = resources.files(__package__).joinpath("_walker.js").read_text(encoding="utf-8")
    return with_aria(source.strip()).replace("__STORE__", _STORE)


#: ``this`` = an iframe element in our world; marks it with its frame id for the walker.
_MARK_FRAME_JS = f"function (frameId) {{ {_STORE}.frames.set(this, frameId); return true; }}"
#: ``this`` = a closed ShadowRoot in our world; lets the walker enter it.
_KEEP_CLOSED_ROOT_JS = f"function () {{ {_STORE}.closed.set(this.host, this); return true; }}"

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

    def frame_id(self, ordinal: int) -> str | None:
        """The frame numbered ``ordinal`` (None for 0, the main frame, and for unknown numbers)."""
        return next((frame_id for frame_id, n in self._ordinals.items() if n == ordinal), None)




@dataclass(eq=False)  # compared by identity: a frame's walk is large
class _Frame:
    """One frame of the page, as the CDP target that renders it knows it."""

    frame_id: str
    parent_id: str | None
    session: CDPSession
    loader_id: str = ""  # changes with every new document in the frame
    context: int = 0  # our isolated world's execution context in this frame
    walk: list[Any] = field(default_factory=list)  # [meta, stream] from the walker


async def _frames_of(session: CDPSession) -> list[_Frame]:
    """The frames this target renders (an out-of-process iframe's target starts at that frame)."""
    tree = (await session.send("Page.getFrameTree"))["frameTree"]
    out: list[_Frame] = []
    pending = [tree]
    while pending:
        node = pending.pop()
        frame = node["frame"]
        out.append(_Frame(frame["id"], frame.get("parentId"), session, frame.get("loaderId", "")))
        pending.extend(node.get("childFrames", ()))
    return out


async def _enter_world(frame: _Frame, memory: EngineMemory | None = None) -> None:
    """Our world's execution context in the frame's document: the one kept for that document
    when there is one (a round trip saved per frame), else a new one (Chrome hands every caller
    asking by name the same world)."""
    key = (id(frame.session), frame.frame_id, frame.loader_id)
    if memory is not None and key in memory.worlds:
        frame.context = memory.worlds[key]
        return
    reply = await frame.session.send("Page.createIsolatedWorld", {"frameId": frame.frame_id, "worldName": _WORLD})
    frame.context = reply["executionContextId"]
    if memory is not None:
        memory.worlds[key] = frame.context


def _is_lost_context(exc: CDPError) -> bool:
    return "context with specified id" in str(exc).lower() or "cannot find context" in str(exc).lower()


async def _in_world(frame: _Frame, memory: EngineMemory, call: Callable[[], Awaitable[T]]) -> T:
    """Run ``call`` in the frame's world; if the kept context is gone (the document replaced its
    world), make it again and retry once."""
    try:
        return await call()
    except CDPError as exc:
        if not _is_lost_context(exc):
            raise
    memory.worlds.pop((id(frame.session), frame.frame_id, frame.loader_id), None)
    await _enter_world(frame, memory)
    return await call()


def _reply_value(reply: dict[str, Any], what: str) -> Any:
    if "exceptionDetails" in reply:
        details = reply["exceptionDetails"]
        raise SnapshotError(
            f"The snapshot {what} failed in the page: {details.get('text', '')} {details.get('exception', {}).get('description', '')}".strip()
        )
    return reply["result"].get("value")


class EngineMemory:
    """What the engine already did for the documents of one page, so a warm snapshot is one
    round trip per frame: which documents had their closed shadow roots looked for, and which
    iframe elements were marked with their frame. Kept by the Stagehand for its page."""

    def __init__(self) -> None:
        self.scanned: set[tuple[str, str]] = set()  # (frame id, loader id): closed roots looked for (or none possible)
        self.marked: set[tuple[str, str, str]] = set()  # (parent frame id, its loader id, child frame id)
        self.worlds: dict[tuple[int, str, str], int] = {}  # (session, frame id, loader id) -> our world's context

    def forget(self, frame: _Frame) -> None:
        """The frame's document is new to our world after all (its store was fresh)."""
        self.scanned.discard((frame.frame_id, frame.loader_id))
        self.marked = {m for m in self.marked if m[:2] != (frame.frame_id, frame.loader_id)}

    def walked(self, frames: list[_Frame]) -> None:
        """Forget the worlds of documents that are gone (the frames not in this walk)."""
        live = {(id(f.session), f.frame_id, f.loader_id) for f in frames}
        for key in [k for k in self.worlds if k not in live]:
            del self.worlds[key]


async def _walk_frame(frame: _Frame, memory: EngineMemory, *, first: bool) -> None:
    """Walk the frame's document; ``first``: its first walk (the walker notes that the closed-root
    decision is made for it, so later walks report only new possible hosts)."""
    async def walk() -> dict[str, Any]:
        return await frame.session.send(
            "Runtime.evaluate",
            {"expression": f"({_walker_source()}).call(document, {json.dumps(first)})", "contextId": frame.context, "returnByValue": True},
        )

    frame.walk = loads_json(_reply_value(await _in_world(frame, memory, walk), "walker") or "[{}, []]")


async def _call_on_node(session: CDPSession, backend_node_id: int, context: int, function: str, *args: Any) -> Any:
    """Run ``function`` with ``this`` = the node, in our world (``context``)."""
    _touch(session)
    resolved = await session.send("DOM.resolveNode", {"backendNodeId": backend_node_id, "executionContextId": context, "objectGroup": _GROUP})
    reply = await session.send(
        "Runtime.callFunctionOn",
        {"functionDeclaration": function, "objectId": resolved["object"]["objectId"], "arguments": [{"value": a} for a in args], "returnByValue": True},
    )
    return _reply_value(reply, "helper")


async def _mark_owner(frame: _Frame, parent: _Frame, memory: EngineMemory) -> bool:
    """Tell the parent frame's walker which iframe element shows ``frame``."""
    try:
        owner = await parent.session.send("DOM.getFrameOwner", {"frameId": frame.frame_id})
        await _in_world(parent, memory, lambda: _call_on_node(parent.session, owner["backendNodeId"], parent.context,
                                                              _MARK_FRAME_JS, frame.frame_id))
        return True
    except (CDPError, PageClosedError, SnapshotError) as exc:  # detached or navigating meanwhile: an empty iframe line
        logger.debug("frame %s has no owner to mark: %s", frame.frame_id, exc)
        return False


async def _hand_over_closed_roots(session: CDPSession, root_frame: str, frames: dict[str, _Frame]) -> set[str]:
    """Find the target's closed shadow roots over CDP and give each to our walker (its frame's
    world). Acts open them to Playwright's world themselves (_actions/_closed_roots.py)."""
    tree = await full_dom_tree(session)
    roots = closed_roots_in(tree, root_frame)

    async def hand_over(backend_node_id: int, frame_id: str) -> None:
        frame = frames.get(frame_id)
        if frame is None:
            return
        _touch(session)
        try:
            await _call_on_node(session, backend_node_id, frame.context, _KEEP_CLOSED_ROOT_JS)
        except (CDPError, PageClosedError) as exc:  # the root went away meanwhile
            logger.debug("closed shadow root %s not handed over: %s", backend_node_id, exc)

    await asyncio.gather(*(hand_over(b, f) for b, f in roots))
    return {frame_id for _, frame_id in roots}


def _parse_walk(stream: list[Any], info: dict[int, ElementInfo], owners: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The walker's stream as CDP-shaped nodes (what ``build_outline`` reads); fills ``info``
    and collects the iframe elements marked with a frame id into ``owners``."""
    top: list[dict[str, Any]] = []
    # Containers being filled: [children list, how many still to come] (-1: no limit).
    open_: list[list[Any]] = [[top, -1]]
    i, n = 0, len(stream)
    while i < n:
        while open_[-1][1] == 0:
            open_.pop()
        container = open_[-1]
        kind = stream[i]
        if kind == _TEXT:
            container[0].append({"nodeType": _TEXT, "backendNodeId": stream[i + 1], "nodeValue": stream[i + 2]})
            container[1] -= 1
            i += 3
            continue
        tag, node_id, bits, role, name, value, extra, shadow, kids = stream[i + 1 : i + 10]
        i += 10
        node: dict[str, Any] = {"nodeType": _ELEMENT, "localName": tag, "nodeName": tag.upper() if kind == 1 else tag, "backendNodeId": node_id}
        info[node_id] = (bits, role, name, value)
        if extra is not None:
            if tag in _FRAME_TAGS:
                node["frameId"] = extra
                owners.append(node)
            else:
                node["attributes"] = ["href", extra]
        container[0].append(node)
        container[1] -= 1
        if kids:
            node["children"] = []
            open_.append([node["children"], kids])
        if shadow >= 0:
            shadow_root: dict[str, Any] = {"nodeType": _FRAGMENT, "shadowRootType": "closed" if shadow & 1 else "open", "children": []}
            node["shadowRoots"] = [shadow_root]
            if shadow >> 1:
                open_.append([shadow_root["children"], shadow >> 1])  # the shadow children come first
    return top


def _document(frame: _Frame, owners: list[dict[str, Any]]) -> dict[str, Any]:
    meta, stream = frame.walk if len(frame.walk) == 2 else ({}, [])
    info: dict[int, ElementInfo] = {}
    children = _parse_walk(stream, info, owners)
    return {"nodeType": _DOCUMENT, "frameId": frame.frame_id, "children": children, "baseURL": meta.get("base", ""),
            "documentURL": meta.get("url", ""), TARGET_INFO_KEY: info}


async def _mark_new_owners(frame_list: list[_Frame], frames: dict[str, _Frame], memory: EngineMemory) -> None:
    """Mark the iframe elements whose frames the parent's walker does not know yet."""
    todo = []
    for frame in frame_list:
        parent = frames.get(frame.parent_id or "")
        if parent is not None and (parent.frame_id, parent.loader_id, frame.frame_id) not in memory.marked:
            todo.append((frame, parent))
    done = await asyncio.gather(*(_mark_owner(f, p, memory) for f, p in todo))
    memory.marked.update((p.frame_id, p.loader_id, f.frame_id) for (f, p), ok in zip(todo, done, strict=True) if ok)


async def _walk_all(targets: PageTargets, memory: EngineMemory) -> tuple[dict[str, _Frame], str]:
    """Walk every frame of the page; returns the frames by id and the main frame's id."""
    sessions = [targets.main, *(await targets.oopif_sessions()).values()]
    per_target = await asyncio.gather(*(_frames_of(s) for s in sessions), return_exceptions=True)
    frames: dict[str, _Frame] = {}
    roots: list[_Frame] = []  # each target's own top frame
    for index, found in enumerate(per_target):
        if isinstance(found, BaseException):
            if index == 0:
                raise found
            continue  # an out-of-process frame that went away: an empty iframe line
        roots.append(found[0])
        for frame in found:
            frames.setdefault(frame.frame_id, frame)
    main_id = roots[0].frame_id
    entered = await asyncio.gather(*(_enter_world(f, memory) for f in frames.values()), return_exceptions=True)
    for frame, outcome in zip(list(frames.values()), entered, strict=True):
        if isinstance(outcome, BaseException):
            if frame.frame_id == main_id:
                raise outcome
            del frames[frame.frame_id]
    frame_list = list(frames.values())
    memory.walked(frame_list)
    await _mark_new_owners(frame_list, frames, memory)
    new = [f for f in frame_list if (f.frame_id, f.loader_id) not in memory.scanned]
    walked = await asyncio.gather(*(_walk_frame(f, memory, first=f in new) for f in frame_list), return_exceptions=True)
    _raise_for_main(frame_list, walked, main_id)
    memory.scanned.update((f.frame_id, f.loader_id) for f in new)
    # Our world's store was fresh where we thought we knew the document: mark again, and treat
    # it as a first walk.
    lost = [f for f in frame_list if f not in new and f.walk and not f.walk[0].get("scanned")]
    for frame in lost:
        memory.forget(frame)
        memory.scanned.add((frame.frame_id, frame.loader_id))
    if lost:
        await _mark_new_owners(frame_list, frames, memory)
    # Look for closed shadow roots where the walker saw a possible host: anywhere in a document
    # walked for the first time, or one new since the last look.
    look = [f for f in frame_list if f.walk and f.walk[0].get("hosts" if f in new or f in lost else "rescan")]
    with_roots = await _scan(look, roots, frames) if look else set()
    redo = [f for f in frame_list if f.frame_id in with_roots or f in lost]
    if redo:
        await asyncio.gather(*(_walk_frame(f, memory, first=f in lost) for f in redo))
    return frames, main_id


def _raise_for_main(frames: list[_Frame], outcomes: list[Any], main_id: str) -> None:
    """Re-raise the main frame's failure; another frame's (it navigated or went away while we
    read it) leaves that frame empty, shown as an empty iframe line."""
    for frame, outcome in zip(frames, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            if frame.frame_id == main_id or not isinstance(outcome, (CDPError, PageClosedError, SnapshotError)):
                raise outcome
            logger.debug("frame %s not read: %s", frame.frame_id, outcome)
            frame.walk = []


async def _scan(stale: list[_Frame], roots: list[_Frame], frames: dict[str, _Frame]) -> set[str]:
    """Hand over the closed shadow roots of every target that renders one of ``stale``; returns
    the frames that have any."""
    targets = {id(root.session): root for root in roots if any(f.session is root.session for f in stale)}
    found = await asyncio.gather(*(_hand_over_closed_roots(root.session, root.frame_id, frames) for root in targets.values()))
    return set().union(*found) if found else set()


def _stitch(frames: dict[str, _Frame], main_id: str) -> dict[str, dict[str, Any]]:
    """Every frame's document, each placed under the iframe element that shows it."""
    owners: list[dict[str, Any]] = []
    documents = {frame_id: _document(frame, owners) for frame_id, frame in frames.items()}
    for owner in owners:
        document = documents.get(owner["frameId"])
        if document is not None and owner["frameId"] != main_id:
            owner["contentDocument"] = document
    return documents


async def capture_snapshot(
    targets: PageTargets, ordinals: FrameOrdinals, *, memory: EngineMemory | None = None, selector: str | None = None,
    confidence: bool = False,
) -> Snapshot:
    """Capture the page (or the subtree ``selector`` points to) into a :class:`Snapshot`.

    ``confidence=True`` also measures the DOM-confidence score (see :mod:`stagehand_py.snapshot._confidence`)
    right after the walk.
    """
    started = time.perf_counter()
    main = targets.main
    touched: dict[int, CDPSession] = {}
    token = _TOUCHED.set(touched)
    scope_object: str | None = None
    dom_confidence: float | None = None
    try:
        frames, main_id = await _walk_all(targets, memory if memory is not None else EngineMemory())
        documents = _stitch(frames, main_id)
        root: dict[str, Any] = documents[main_id]
        root_xpath = ""
        base_url = root.get("baseURL") or root.get("documentURL") or ""
        info: dict[int, ElementInfo] = root[TARGET_INFO_KEY]
        if selector is not None:
            _touch(main)
            scope_object = await _locate(main, selector, frames[main_id].context)
            root, root_xpath, base_url, info = await _scoped(main, scope_object, documents)
        if confidence:
            dom_confidence = (await measure_over_cdp(main, object_id=scope_object, context=frames[main_id].context)).score
    except BaseException:
        # Cancelled (a timeout: the page may be stuck) or failed: free our objects without
        # waiting for a renderer that may not answer for a long time.
        _release_later(list(touched.values()))
        raise
    finally:
        _TOUCHED.reset(token)
    # Only where objects were made: a warm snapshot makes none (its walks return by value).
    await asyncio.gather(*(_release(s) for s in touched.values()))
    result = build_outline(root, info=info, frame_ordinal=ordinals, root_ordinal=0, root_xpath=root_xpath, base_url=base_url)
    logger.debug("snapshot: %d frames, %d lines, %d chars in %.0f ms", len(frames), result.tree.count("\n") + 1,
                 len(result.tree), (time.perf_counter() - started) * 1000)
    return Snapshot(result.tree, result.xpath_map, result.url_map, targets.page.url if targets.page is not None else "",
                    dom_confidence=dom_confidence)


async def capture_element(targets: PageTargets, ordinals: FrameOrdinals, *, memory: EngineMemory,
                          selector: str) -> Snapshot | None:
    """The subtree of the one main-frame element ``selector`` names, read without walking the rest of
    the page (to check that element's role and name before an act). Only for a document walked
    before, whose nodes and closed roots our world already knows; None otherwise, or when its world
    was replaced: then take a scoped :func:`capture_snapshot`. Iframes inside the element are empty."""
    main = targets.main
    top = (await _frames_of(main))[0]
    if (top.frame_id, top.loader_id) not in memory.scanned:
        return None
    await _enter_world(top, memory)
    try:
        root, root_xpath, base_url, info = await _scoped(main, await _locate(main, selector, top.context), {})
    except CDPError as exc:
        if _is_lost_context(exc):
            return None
        raise
    finally:
        await _release(main)
    result = build_outline(root, info=info, frame_ordinal=ordinals, root_ordinal=0, root_xpath=root_xpath, base_url=base_url)
    return Snapshot(result.tree, result.xpath_map, result.url_map, targets.page.url if targets.page is not None else "")


async def element_backend_ids(targets: PageTargets, ordinals: FrameOrdinals, element_ids: list[str]) -> dict[str, int | None]:
    """Chrome's backend node id of each outline element id (``"<ordinal>-<n>"``), for CDP commands
    that need one; None for an element that is gone or an id that is not ours."""
    wanted: dict[str | None, list[tuple[str, int]]] = {}
    out: dict[str, int | None] = dict.fromkeys(element_ids)
    for element_id in element_ids:
        try:
            ordinal, number = (int(part) for part in element_id.split("-", 1))
        except ValueError:
            continue
        wanted.setdefault(ordinals.frame_id(ordinal) if ordinal else None, []).append((element_id, number))
    sessions = [targets.main, *(await targets.oopif_sessions()).values()]
    for index, session in enumerate(sessions):
        for frame in await _frames_of(session):
            key = None if index == 0 and frame.parent_id is None else frame.frame_id
            if key not in wanted:
                continue
            await _enter_world(frame)
            for element_id, number in wanted.pop(key):
                reply = await session.send("Runtime.evaluate", {
                    "expression": f"(() => {{ const r = {_STORE}.nodes.get({number}); return r ? r.deref() || null : null; }})()",
                    "contextId": frame.context, "objectGroup": _GROUP})
                object_id = reply.get("result", {}).get("objectId")
                if object_id is not None:
                    out[element_id] = (await session.send("DOM.describeNode", {"objectId": object_id}))["node"]["backendNodeId"]
            await _release(session)
    return out


async def _scoped(
    session: CDPSession, object_id: str, documents: dict[str, dict[str, Any]]
) -> tuple[dict[str, Any], str, str, dict[int, ElementInfo]]:
    """The scoped element's own walk (its subtree, frames stitched in) and where it sits."""
    walk, where = await asyncio.gather(
        session.send("Runtime.callFunctionOn", {"functionDeclaration": _walker_source(), "objectId": object_id,
                                                "arguments": [{"value": False}], "returnByValue": True}),
        session.send("Runtime.callFunctionOn", {"functionDeclaration": _XPATH_OF_JS, "objectId": object_id, "returnByValue": True}),
    )
    _, stream = loads_json(_reply_value(walk, "walker") or "[{}, []]")
    info: dict[int, ElementInfo] = {}
    owners: list[dict[str, Any]] = []
    nodes = _parse_walk(stream, info, owners)
    for owner in owners:
        document = documents.get(owner["frameId"])
        if document is not None:
            owner["contentDocument"] = document
    path, base = _reply_value(where, "xpath")
    if not nodes:
        raise SnapshotError("the element to snapshot went away while it was being read; try again.")
    return nodes[0], path, base, info


async def _locate(session: CDPSession, selector: str, context: int) -> str:
    """Resolve ``selector`` (XPath or CSS) in the main frame, in our world, to a remote object id."""
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
        {"expression": f"({_LOCATE_JS})({json.dumps(expr)}, {json.dumps(kind)})", "objectGroup": _GROUP, "contextId": context},
    )
    if "exceptionDetails" in reply:
        detail = reply["exceptionDetails"].get("exception", {}).get("description") or reply["exceptionDetails"].get("text", "")
        raise InvalidArgumentError(f"selector {selector!r} is not a valid {kind.upper()} expression: {detail}")
    result = reply["result"]
    if result.get("subtype") == "null" or "objectId" not in result:
        raise ElementNotFoundError(f"selector {selector!r} matches no element in the main frame, so there is nothing to snapshot.", selector=selector)
    object_id: str = result["objectId"]
    return object_id


_RELEASING: set[asyncio.Task[None]] = set()  # kept until done, so the loop does not drop them


def _release_later(sessions: list[CDPSession]) -> None:
    for session in sessions:
        task = asyncio.ensure_future(_release(session))
        _RELEASING.add(task)
        task.add_done_callback(_RELEASING.discard)


async def _release(session: CDPSession) -> None:
    try:
        await session.send("Runtime.releaseObjectGroup", {"objectGroup": _GROUP})
    except (CDPError, PageClosedError):
        pass  # the page is gone, and its objects with it
