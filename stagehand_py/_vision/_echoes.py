"""Where a page shows a variable's value as text: the boxes of the text runs that echo it.

A page may copy what was typed into ordinary text ("Coupon SPRING-2731-XQ applied"); the field
mask (``_mask.py``) cannot see that. ``_echoes.js`` lists every rendered text run of a frame (text
nodes, open shadow roots included; a field's value; an empty field's ``placeholder``; a broken
image's ``alt``) with its boxes. It runs in every frame, each in the library's isolated world
there (the snapshot walker's; an out-of-process iframe through its own session), so the page's
overrides of ``TreeWalker``, ``Range`` or ``getBoundingClientRect`` do not reach it; a frame is
placed by its iframe's content box as DevTools reports it. Python decides which runs echo a
value with the call's redaction (any case, URL, HTML, JSON, base64 or Unicode form, as
everywhere else), run by run and over each block's joined text (a value split across ``<b>`` or
``<span>`` elements masks the block's runs).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from .._errors import SnapshotError
from .._logging import logger
from ..browser._cdp import loads_json

if TYPE_CHECKING:
    from .._secrets import VariableSet

__all__ = ["EchoBoxes", "echo_boxes"]

#: The library's isolated world (the snapshot walker's): Chrome hands every caller asking for
#: it by name the same world, so no second world is made per frame.
_WORLD = "stagehand_py"
#: Pixels added around each box: glyphs (accents, descenders, italics) may overhang a line box.
_PAD = 3.0


@cache
def _source() -> str:
    return resources.files(__package__).joinpath("_echoes.js").read_text(encoding="utf-8").strip()


@dataclass(frozen=True)
class EchoBoxes:
    """The boxes (CSS pixels, the top frame's viewport) of the text runs that echo a value,
    with what is needed to place them on a screenshot: the device pixel ratio and the scroll
    offset at the time they were measured."""

    boxes: list[tuple[float, float, float, float]]
    device_pixel_ratio: float
    scroll: tuple[float, float]


def _echoing(runs: list[list[Any]], variables: VariableSet) -> set[int]:
    """Indexes of the runs to mask: each run that echoes a value on its own, and every run of a
    block whose joined text echoes one that its single runs do not (a value split across elements)."""
    by_group: dict[int, list[int]] = defaultdict(list)
    for index, run in enumerate(runs):
        by_group[int(run[1])].append(index)
    hits: set[int] = set()
    for members in by_group.values():
        texts = [str(runs[i][0]) for i in members]
        if all(variables.redact(joined) == joined for joined in ("".join(texts), "\n".join(texts))):
            continue  # the common case: nothing in this block, one pass over its text
        own = {i for i, text in zip(members, texts, strict=True) if variables.redact(text) != text}
        hits |= own
        rest = "".join(str(runs[i][0]) for i in members if i not in own)
        if own != set(members) and variables.redact(rest) != rest:
            hits.update(members)
    return hits


async def echo_boxes(page: Any, variables: VariableSet) -> EchoBoxes:
    """The boxes of the page's text runs (every frame) that show a value ``variables`` hides.

    Raises :class:`SnapshotError` when the page cannot be read (closing, navigating): a
    screenshot whose text could not be checked is not taken, rather than taken unmasked.
    """
    sessions: list[Any] = []
    try:
        sessions.append(await page.context.new_cdp_session(page))
        for frame in page.frames[1:]:  # an out-of-process iframe (another site) has a session of its own
            try:
                sessions.append(await page.context.new_cdp_session(frame))
            except Exception:  # part of its parent's process: the page's session renders it
                continue
        return await _measure(sessions, variables)
    except SnapshotError:
        raise
    except Exception as exc:
        raise SnapshotError(f"Could not read the page's text to mask variable values ({type(exc).__name__}); "
                            "no screenshot was taken.") from exc
    finally:
        for session in sessions:
            try:
                await session.detach()
            except Exception:  # the page closed meanwhile: the session went with it
                pass


async def _measure(sessions: list[Any], variables: VariableSet) -> EchoBoxes:
    """Walk every frame in its own isolated world and place its boxes in the top viewport: a
    child frame's offset is its owner iframe's content box, asked of the browser (``DOM.getBoxModel``,
    not the page), added to its parent's."""
    owner: dict[str, Any] = {}  # frame id -> the session that renders it (an OOPIF's own wins)
    parent: dict[str, str | None] = {}
    for session in sessions:
        pending = [(await session.send("Page.getFrameTree"))["frameTree"]]
        while pending:
            node = pending.pop()
            frame_id = node["frame"]["id"]
            parent[frame_id] = node["frame"].get("parentId")
            if frame_id not in owner or session is not sessions[0]:
                owner[frame_id] = session
            pending.extend(node.get("childFrames", ()))
    walks = await asyncio.gather(*(_walk(owner[f], f, top=parent.get(f) is None) for f in owner))
    frames: dict[str, tuple[float, float, float, float]] = {}  # frame id -> its viewport in the top one

    async def viewport(frame_id: str) -> tuple[float, float, float, float]:
        if frame_id not in frames:
            up = parent.get(frame_id)
            if up is None or up not in owner:
                frames[frame_id] = (0.0, 0.0, 0.0, 0.0)
            else:
                # The owner iframe lives in the parent's document: its content quad, in the
                # parent frame's viewport, from the parent's session (the browser's layout, not the page's).
                session = owner[up]
                node = await session.send("DOM.getFrameOwner", {"frameId": frame_id})
                quad = (await session.send("DOM.getBoxModel", {"backendNodeId": node["backendNodeId"]}))["model"]["content"]
                ox, oy, _, _ = await viewport(up)
                left, top = min(quad[0::2]), min(quad[1::2])
                frames[frame_id] = (ox + left, oy + top, max(quad[0::2]) - left, max(quad[1::2]) - top)
        return frames[frame_id]

    boxes: list[tuple[float, float, float, float]] = []
    top: dict[str, Any] = {}
    for frame_id, found in zip(owner, walks, strict=True):
        if parent.get(frame_id) is None:
            top = found or {}
        if found is None:  # a frame that could not be read (navigating): the whole frame is masked
            boxes.append(await viewport(frame_id))
            continue
        runs: list[list[Any]] = found["runs"]
        hits = _echoing(runs, variables)
        if not hits:
            continue
        dx, dy, _, _ = await viewport(frame_id)
        boxes += [(x + dx - _PAD, y + dy - _PAD, w + 2 * _PAD, h + 2 * _PAD)
                  for index in sorted(hits) for x, y, w, h in runs[index][2]]
    return EchoBoxes(boxes, float(top.get("dpr") or 1.0), (float(top.get("sx") or 0.0), float(top.get("sy") or 0.0)))


async def _walk(session: Any, frame_id: str, *, top: bool) -> dict[str, Any] | None:
    """``_echoes.js``'s answer for one frame, run in the library's isolated world there; None for
    an iframe that cannot be read now (its box is masked whole). The top frame must be read."""
    try:
        world = await session.send("Page.createIsolatedWorld", {"frameId": frame_id, "worldName": _WORLD})
        reply = await session.send("Runtime.evaluate", {"expression": f"({_source()})()",
                                                        "contextId": world["executionContextId"], "returnByValue": True})
        if "exceptionDetails" in reply:
            raise SnapshotError(f"the mask's walk failed: {reply['exceptionDetails'].get('text', '')}")
        value: dict[str, Any] = loads_json(reply["result"]["value"])
        return value
    except Exception as exc:
        if top:
            raise SnapshotError(f"Could not read the page's text to mask variable values ({exc}); "
                                "no screenshot was taken.") from exc
        logger.debug("frame text not read, the frame is masked whole: %s", type(exc).__name__)
        return None
