"""Screenshots that never show a secret: every field holding a variable's value, and every text
run that shows one, is covered by a solid box before the picture leaves this module.

A secret filled into a field through ``variables=`` may only go into that field. Text bound for a
model is redacted (:meth:`~stagehand_py._secrets.VariableSet.redact`); a screenshot would still
show the value, so every screenshot the library takes for a model or for the user (vision
fallback, the agent's screenshots, the pytest plugin's failure evidence, MCP's screenshot tool)
goes through :func:`masked_screenshot`. A field or a text run is masked when its text, run
through the call's redaction, changes: the value itself and its echoes (any case, URL, HTML,
JSON, base64 and Unicode forms) count alike.

Two layers:

- Fields (``input``, ``textarea``, ``contenteditable``) in every frame, open shadow roots
  included: Playwright's ``mask`` (its utility world reads the values; :func:`secret_fields`).
- Text the page renders (``_echoes.py``): text nodes, a field's value, an empty field's
  ``placeholder`` and a broken image's ``alt``, in every frame (cross-origin and out-of-process
  iframes included) and open shadow root, found in the library's isolated world (page overrides of
  ``TreeWalker``, ``Range``, ``getBoundingClientRect`` do not reach it), measured before and
  after the capture and painted onto the image here, so nothing the page does can take the box
  off. A value split across elements masks its whole block.

Not covered (docs/security.md): text inside closed shadow roots, text drawn without text nodes
(canvas, images, CSS ``content``), and a ``title`` (a tooltip, never in a screenshot).
"""

from __future__ import annotations

import asyncio
import io
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PIL import Image, ImageDraw

from ._echoes import EchoBoxes, echo_boxes

if TYPE_CHECKING:
    from .._secrets import VariableSet

__all__ = ["MASK_COLOR", "masked_screenshot", "secret_fields"]

logger = logging.getLogger("stagehand_py._vision")

#: The colour of the box over a masked field: one solid colour, recognisably not page content.
MASK_COLOR = "#FF00FF"
#: Elements holding a value (read with ``input_value``) and editable text (``text_content``).
_VALUE_FIELDS = "input, textarea"
_TEXT_FIELDS = "[contenteditable]:not([contenteditable='false'])"


async def _read(handle: Any, by_value: bool) -> str:
    # input_value() and text_content() run in Playwright's utility world: a page that overrides
    # the value getter (or textContent) cannot hide a secret from the mask.
    try:
        text = await (handle.input_value() if by_value else handle.text_content())
    except Exception as exc:  # the element went away meanwhile: nothing of it on the screenshot
        logger.debug("field value not read: %s", type(exc).__name__)
        return ""
    finally:
        await handle.dispose()
    return str(text or "")


async def secret_fields(page: Any, variables: VariableSet | None) -> list[Any]:
    """Locators of the editable fields (every frame) whose value contains a value ``variables`` hides.

    Nothing hidden: ``[]`` at once, without a round trip to the page.
    """
    if variables is None or not variables.hides_anything:
        return []
    found: list[Any] = []
    for frame in page.frames:
        for selector, by_value in ((_VALUE_FIELDS, True), (_TEXT_FIELDS, False)):
            fields = frame.locator(selector)
            try:
                handles = await fields.element_handles()
            except Exception as exc:  # a frame detached or navigating: nothing of it to mask
                logger.debug("no fields from frame %s: %s", getattr(frame, "url", "?"), type(exc).__name__)
                continue
            values = await asyncio.gather(*(_read(handle, by_value) for handle in handles))
            for index, value in enumerate(values):
                if value and variables.redact(value) != value:
                    found.append(fields.nth(index))
    return found


async def masked_screenshot(
    page: Any,
    variables: VariableSet | None,
    *,
    element: Any = None,
    downscale: float = 1.0,
    **options: Any,
) -> bytes:
    """``page.screenshot(**options)`` (or ``element.screenshot``, an element handle of ``page``)
    with every field and text run showing a value ``variables`` hides masked (see the module).

    ``downscale`` below 1 shrinks the image by that factor (for a model that sees a smaller
    screen than the viewport). ``path`` is written only once the image is masked. Nothing
    hidden: a plain screenshot, no extra round trip. Raises :class:`~stagehand_py.SnapshotError`
    when the page's text cannot be read (no unchecked screenshot is taken).
    """
    hides = variables is not None and variables.hides_anything
    path = options.pop("path", None) if hides else None
    mask = await secret_fields(page, variables)
    if mask:
        options = {**options, "mask": mask, "mask_color": MASK_COLOR}
    if hides and element is not None:
        await element.scroll_into_view_if_needed()  # what element.screenshot does first: measure after it
    before = await echo_boxes(page, variables) if hides else None  # type: ignore[arg-type]  # hides: not None
    data: bytes = await (element if element is not None else page).screenshot(**options)
    if before is not None:
        after = await echo_boxes(page, variables)  # type: ignore[arg-type]
        data = _paint(data, [before, after], await _origin(page, element, after, options), options)
    if downscale < 1.0:
        data = _shrink(data, downscale)
    if path is not None:
        await asyncio.to_thread(Path(path).write_bytes, data)
    return data


async def _origin(page: Any, element: Any, now: EchoBoxes, options: dict[str, Any]) -> tuple[float, float]:
    """Where the image's top-left corner is, in CSS pixels of the top document."""
    if element is not None:
        box = await element.bounding_box()
        return (box["x"] + now.scroll[0], box["y"] + now.scroll[1]) if box else now.scroll
    full = bool(options.get("full_page"))
    x, y = (0.0, 0.0) if full else now.scroll
    clip = options.get("clip")
    return (x + clip["x"], y + clip["y"]) if clip else (x, y)


def _paint(data: bytes, measured: list[EchoBoxes], origin: tuple[float, float], options: dict[str, Any]) -> bytes:
    """``data`` with every measured box filled with :data:`MASK_COLOR` (the same encoding back)."""
    if not any(m.boxes for m in measured):
        return data
    image = Image.open(io.BytesIO(data)).convert("RGB")
    draw = ImageDraw.Draw(image)
    for m in measured:
        k = 1.0 if options.get("scale") == "css" else m.device_pixel_ratio
        for x, y, w, h in m.boxes:
            left, top = (x + m.scroll[0] - origin[0]) * k, (y + m.scroll[1] - origin[1]) * k
            draw.rectangle((left, top, left + w * k, top + h * k), fill=MASK_COLOR)
    out = io.BytesIO()
    if options.get("type") == "jpeg":
        image.save(out, format="JPEG", quality=options.get("quality") or 80)
    else:
        image.save(out, format="PNG")
    return out.getvalue()


def _shrink(png: bytes, factor: float) -> bytes:
    image = Image.open(io.BytesIO(png))
    size = (max(1, round(image.width * factor)), max(1, round(image.height * factor)))
    out = io.BytesIO()
    image.resize(size, Image.Resampling.LANCZOS).save(out, format="PNG")
    return out.getvalue()
