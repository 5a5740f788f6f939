"""Vision: what the outline cannot say.

- :func:`measure_dom_confidence` / ``Snapshot.dom_confidence``: how much of a page the
  accessibility outline can tell a model (0..1; measured with the snapshot, in
  ``snapshot/_confidence.js``), the signal to look at the screenshot.
- :func:`annotated_screenshot`: the viewport with numbered boxes around the snapshot's
  actionable elements; box numbers map to outline element ids.
- :func:`page_screenshot`: the viewport or one element, for extraction.
- :func:`masked_screenshot`: a screenshot with every field and text run showing a variable's
  value (a secret) masked; every screenshot we take for a model or the user goes through it.

Images are capped in size (downscaled, PNG or JPEG by size) and deterministic for one page state.
"""

from ..snapshot._confidence import LOW_CONFIDENCE, DomConfidence, measure_dom_confidence
from ._annotate import Screenshot, actionable_ids, annotated_screenshot, page_screenshot
from ._image import DEFAULT_MAX_BYTES, DEFAULT_MAX_PIXELS, DEFAULT_MAX_SIDE, Box, estimate_image_tokens
from ._mask import MASK_COLOR, masked_screenshot, secret_fields

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_PIXELS",
    "DEFAULT_MAX_SIDE",
    "LOW_CONFIDENCE",
    "MASK_COLOR",
    "Box",
    "DomConfidence",
    "Screenshot",
    "actionable_ids",
    "annotated_screenshot",
    "estimate_image_tokens",
    "masked_screenshot",
    "measure_dom_confidence",
    "page_screenshot",
    "secret_fields",
]
