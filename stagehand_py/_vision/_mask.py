"""Screenshots that never show a secret: every editable field holding a variable's value is
masked (a solid box drawn by Playwright over it) before the pixels leave the browser.

A secret filled into a field through ``variables=`` may only go into that field. Text bound for a
model is redacted (:meth:`~stagehand_py._secrets.VariableSet.redact`); a screenshot of a plain text
input (not ``type=password``) would still show the value, so every screenshot sent to a model
goes through :func:`masked_screenshot`. A field is masked when its current value, run through
the call's redaction, changes: the value itself and its echoes (case, encodings) count alike.

Covered: ``input``, ``textarea`` and ``contenteditable`` elements in every frame of the page,
open shadow roots included (Playwright's CSS engine pierces them). Not covered: a page copying
the value into ordinary text, and fields inside closed shadow roots (see docs/security.md).
"""

from __future__ import annotations

import asyncio
import io
import logging
from typing import TYPE_CHECKING, Any

from PIL import Image

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
    with every field holding a value ``variables`` hides masked (see :func:`secret_fields`).

    ``downscale`` below 1 shrinks the image by that factor (for a model that sees a smaller
    screen than the viewport). Nothing hidden: a plain screenshot, no extra round trip.
    """
    mask = await secret_fields(page, variables)
    if mask:
        options = {**options, "mask": mask, "mask_color": MASK_COLOR}
    data: bytes = await (element if element is not None else page).screenshot(**options)
    if downscale < 1.0:
        data = _shrink(data, downscale)
    return data


def _shrink(png: bytes, factor: float) -> bytes:
    image = Image.open(io.BytesIO(png))
    size = (max(1, round(image.width * factor)), max(1, round(image.height * factor)))
    out = io.BytesIO()
    image.resize(size, Image.Resampling.LANCZOS).save(out, format="PNG")
    return out.getvalue()
