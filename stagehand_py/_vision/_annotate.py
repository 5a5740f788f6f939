"""Screenshots for models: annotated with numbered element boxes (observe/act), or plain (extract).

An annotated screenshot is the viewport as a person sees it, with a numbered box around each
actionable element of the snapshot that is on screen. Numbers run 1..N in outline order and
map to the outline's element ids (``Screenshot.numbers``), so a model that picks "box 3" is
picking an id the executor already knows how to reach.

Deterministic: for one page state (DOM, layout, scroll position, viewport) the boxes, their
numbers and the image bytes are the same on every call. Capped: the image is downscaled to fit
``max_side``/``max_pixels``, encoded as PNG or JPEG (whichever is smaller), and shrunk further
until it fits ``max_bytes``.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from PIL import Image

from .._actions._js import load_js
from .._actions._resolve import parse_canonical_xpath, resolve_element
from .._errors import ElementNotFoundError, InvalidArgumentError, StagehandError
from ..snapshot import Snapshot, parse_outline
from ._image import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_PIXELS,
    DEFAULT_MAX_SIDE,
    Box,
    EncodedImage,
    MediaType,
    draw_boxes,
    encode_smallest,
    estimate_image_tokens,
    fit_image,
    fit_scale,
)
from ._mask import masked_screenshot

if TYPE_CHECKING:
    from .._secrets import VariableSet
    from ..llm import ImagePart

__all__ = ["Screenshot", "actionable_ids", "annotated_screenshot", "page_screenshot"]

logger = logging.getLogger("stagehand_py._vision")

#: Smallest visible side (CSS px) for a box to be drawn.
_MIN_SIDE = 2.0
#: Each pass that is still over max_bytes shrinks the image by this factor, down to _MIN_SCALE.
_SHRINK, _MIN_SCALE = 0.75, 0.15

# Paths go in and rects come out as one JSON string each: Playwright's per-value serialisation
# of ~1,000 nested step lists costs seconds, a string costs nothing.
_BOXES_JS = """(json) => {
  const resolve = (%s);
  const rects = JSON.parse(json).map((steps) => {
    let el = null;
    try { el = resolve({ mode: 'canonical', steps }); } catch (e) { el = null; }
    if (!el || el.nodeType !== 1) return null;
    const r = el.getBoundingClientRect();
    return [r.x, r.y, r.width, r.height];
  });
  return JSON.stringify({ rects, width: window.innerWidth, height: window.innerHeight });
}"""


@dataclass(frozen=True, slots=True)
class Screenshot:
    """An image for a model, with the numbered boxes drawn on it (none for a plain screenshot).

    ``width``/``height`` are the encoded image's pixels; ``scale`` is image pixels per CSS
    pixel; box coordinates are CSS pixels of the viewport.
    """

    data: bytes
    media_type: MediaType
    width: int
    height: int
    scale: float
    boxes: tuple[Box, ...] = ()

    @property
    def numbers(self) -> Mapping[int, str]:
        """Box number -> outline element id."""
        return MappingProxyType({box.number: box.element_id for box in self.boxes})

    def element_id(self, number: int) -> str:
        """The outline element id of box ``number``."""
        for box in self.boxes:
            if box.number == number:
                return box.element_id
        raise InvalidArgumentError(f"no box numbered {number} in this screenshot (boxes 1..{len(self.boxes)}).")

    @property
    def tokens(self) -> int:
        """Estimated input tokens (Anthropic's rule; see :func:`estimate_image_tokens`)."""
        return estimate_image_tokens(self.width, self.height)

    def image_part(self) -> ImagePart:
        """The image as a message part for the LLM layer."""
        from ..llm import ImagePart  # the LLM layer loads lazily; snapshots import this package

        return ImagePart(data=self.data, media_type=self.media_type)

    def __repr__(self) -> str:
        return f"Screenshot({self.media_type}, {self.width}x{self.height}, {len(self.data)} bytes, {len(self.boxes)} boxes)"


def actionable_ids(tree: str) -> list[str]:
    """Ids of the outline's actionable elements (the snapshot's :data:`ACTIONABLE_ROLES`), in outline order."""
    return [element.id for element in parse_outline(tree) if element.actionable]


def _steps_payload(xpath: str) -> list[dict[str, Any]] | None:
    """Resolver steps for a main-frame canonical path, or None (frame hop / not canonical)."""
    steps = parse_canonical_xpath(xpath)
    if steps is None or any(s.is_frame for s in steps[:-1]):
        return None
    return [{"name": s.name, "index": s.index, "text": s.is_text, "nonblank": s.nonblank, "shadow": s.shadow} for s in steps]


async def _element_rects(page: Any, snapshot: Snapshot, ids: Sequence[str]) -> tuple[dict[str, tuple[float, float, float, float]], float, float]:
    """CSS-pixel rects (viewport coordinates) of ``ids``, and the viewport size.

    Main-frame elements are measured in one evaluation; elements inside iframes go through the
    executor's resolver one by one (Playwright reports their boxes in main-frame coordinates).
    """
    batch: list[tuple[str, list[dict[str, Any]]]] = []
    framed: list[str] = []
    for element_id in ids:
        xpath = snapshot.xpath_map.get(element_id)
        if not xpath:
            continue
        steps = _steps_payload(xpath)
        if steps is None:
            framed.append(element_id)
        else:
            batch.append((element_id, steps))
    reply = json.loads(await page.evaluate(_BOXES_JS % load_js("_resolver.js").strip(), json.dumps([steps for _, steps in batch])))
    rects: dict[str, tuple[float, float, float, float]] = {}
    for (element_id, _), rect in zip(batch, reply["rects"], strict=True):
        if rect is not None:
            rects[element_id] = (float(rect[0]), float(rect[1]), float(rect[2]), float(rect[3]))
    for element_id in framed:
        try:
            handle = await resolve_element(page, "xpath=" + snapshot.xpath_map[element_id], timeout=0)
        except (ElementNotFoundError, InvalidArgumentError) as exc:
            logger.debug("no box for %s: %s", element_id, exc)
            continue
        try:
            box = await handle.bounding_box()
        finally:
            await handle.dispose()
        if box is not None:
            rects[element_id] = (box["x"], box["y"], box["width"], box["height"])
    return rects, float(reply["width"]), float(reply["height"])


def _visible_boxes(ids: Sequence[str], rects: Mapping[str, tuple[float, float, float, float]], width: float, height: float) -> list[Box]:
    """Boxes clipped to the viewport, numbered 1..N in ``ids`` order; off-screen ones left out."""
    boxes: list[Box] = []
    for element_id in ids:
        rect = rects.get(element_id)
        if rect is None:
            continue
        x, y, w, h = rect
        left, top = max(0.0, x), max(0.0, y)
        right, bottom = min(width, x + w), min(height, y + h)
        if right - left < _MIN_SIDE or bottom - top < _MIN_SIDE:
            continue
        boxes.append(Box(len(boxes) + 1, element_id, round(left, 2), round(top, 2), round(right - left, 2), round(bottom - top, 2)))
    return boxes


def _fit(png: bytes, boxes: Sequence[Box], *, max_side: int, max_pixels: int, max_bytes: int) -> Screenshot:
    try:
        source = Image.open(io.BytesIO(png))
        source.load()
    except OSError as exc:
        raise StagehandError(f"the browser returned a screenshot that is not a readable PNG ({len(png)} bytes).") from exc
    scale = fit_scale(source.width, source.height, max_side=max_side, max_pixels=max_pixels)
    while True:
        image = fit_image(source, scale)
        actual = image.width / source.width
        encoded: EncodedImage = encode_smallest(draw_boxes(image, boxes, scale=actual) if boxes else image)
        if len(encoded.data) <= max_bytes or scale <= _MIN_SCALE:
            if len(encoded.data) > max_bytes:
                logger.warning("screenshot still %d bytes at scale %.2f (max_bytes=%d)", len(encoded.data), scale, max_bytes)
            return Screenshot(encoded.data, encoded.media_type, encoded.width, encoded.height, actual, tuple(boxes))
        scale = max(_MIN_SCALE, scale * _SHRINK)


async def annotated_screenshot(
    page: Any,
    snapshot: Snapshot,
    *,
    ids: Sequence[str] | None = None,
    variables: VariableSet | None = None,
    max_side: int = DEFAULT_MAX_SIDE,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Screenshot:
    """The viewport with numbered boxes around the snapshot's on-screen actionable elements.

    ``ids`` picks the elements to box instead (in the order given); the snapshot must be of
    the page as it is now (its xpaths locate the elements). Fields holding a value of
    ``variables`` are masked (:func:`~._mask.masked_screenshot`).
    """
    wanted = actionable_ids(snapshot.tree) if ids is None else list(ids)
    rects, width, height = await _element_rects(page, snapshot, wanted)
    png = await masked_screenshot(page, variables, type="png", scale="css")
    boxes = _visible_boxes(wanted, rects, width, height)
    return _fit(png, boxes, max_side=max_side, max_pixels=max_pixels, max_bytes=max_bytes)


async def page_screenshot(
    page: Any,
    *,
    selector: str | None = None,
    variables: VariableSet | None = None,
    max_side: int = DEFAULT_MAX_SIDE,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Screenshot:
    """The viewport, or the element ``selector`` names (XPath or CSS, as for snapshots), capped;
    fields holding a value of ``variables`` masked."""
    if selector is None:
        png = await masked_screenshot(page, variables, type="png", scale="css")
    else:
        handle = await resolve_element(page, selector, timeout=2.0)
        try:
            png = await masked_screenshot(page, variables, element=handle, type="png", scale="css")
        finally:
            await handle.dispose()
    return _fit(png, (), max_side=max_side, max_pixels=max_pixels, max_bytes=max_bytes)
