"""Screenshot sizing, box drawing and encoding (pure: bytes and Pillow images in, bytes out).

Boxes are drawn here, on the PNG, rather than as an overlay in the page: the page is never
touched (no DOM mutation a page script or our settle logic could see, nothing left behind if a
navigation races), and the same boxes on the same pixels give the same bytes.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal, TypeAlias

from PIL import Image, ImageDraw, ImageFont

from .._errors import InvalidArgumentError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_PIXELS",
    "DEFAULT_MAX_SIDE",
    "PALETTE",
    "Box",
    "EncodedImage",
    "draw_boxes",
    "encode_smallest",
    "estimate_image_tokens",
    "fit_scale",
    "fit_image",
]

#: Longest side of an image sent to a model, in pixels.
DEFAULT_MAX_SIDE = 1280
#: Most pixels (~1.15 MP: what Anthropic models take without resizing).
DEFAULT_MAX_PIXELS = 1_150_000
#: Most bytes; a larger encoding is shrunk further.
DEFAULT_MAX_BYTES = 800_000
#: Box colours, picked by box number (deterministic, distinguishable on light and dark pages).
PALETTE: tuple[tuple[int, int, int], ...] = (
    (230, 25, 75), (0, 130, 200), (60, 180, 75), (245, 130, 48), (145, 30, 180),
    (0, 128, 128), (240, 50, 230), (128, 0, 0), (0, 0, 128), (128, 128, 0),
)
_LINE = 2
_FONT_SIZE = 12
_JPEG_QUALITY = 80

MediaType: TypeAlias = Literal["image/png", "image/jpeg"]


@dataclass(frozen=True, slots=True)
class Box:
    """One numbered element box, in CSS pixels of the viewport (before any downscaling)."""

    number: int
    element_id: str
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True, slots=True)
class EncodedImage:
    data: bytes
    media_type: MediaType
    width: int
    height: int


def estimate_image_tokens(width: int, height: int, *, provider: Literal["anthropic", "openai"] = "anthropic") -> int:
    """Input tokens a provider bills for an image of this size.

    - ``anthropic``: ``width * height / 750`` (their published rule);
    - ``openai`` (high detail): fit in 2048x2048, shortest side to 768, then 170 per 512-px tile + 85.
    """
    if width <= 0 or height <= 0:
        return 0
    if provider == "anthropic":
        return math.ceil(width * height / 750)
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def fit_scale(width: int, height: int, *, max_side: int = DEFAULT_MAX_SIDE, max_pixels: int = DEFAULT_MAX_PIXELS) -> float:
    """The factor (<= 1) that makes ``width x height`` fit both caps."""
    if max_side < 16 or max_pixels < 256:
        raise InvalidArgumentError(f"image caps too small: max_side={max_side} (>= 16), max_pixels={max_pixels} (>= 256).")
    if width <= 0 or height <= 0:
        return 1.0
    return min(1.0, max_side / max(width, height), math.sqrt(max_pixels / (width * height)))


def fit_image(image: Image.Image, scale: float) -> Image.Image:
    """``image`` scaled by ``scale`` (<= 1) with a high-quality filter; the same image at 1."""
    if scale >= 1.0:
        return image
    # Rounded down, so the result never exceeds the caps the scale was computed for.
    size = (max(1, math.floor(image.width * scale + 1e-9)), max(1, math.floor(image.height * scale + 1e-9)))
    return image.resize(size, Image.Resampling.LANCZOS)


@cache
def _font() -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=_FONT_SIZE)


def draw_boxes(image: Image.Image, boxes: Sequence[Box], *, scale: float = 1.0) -> Image.Image:
    """A copy of ``image`` with each box outlined and its number on a filled tag.

    Coordinates are CSS pixels times ``scale``. The tag sits above the box's top-left corner, or
    inside it when the box touches the top edge. Boxes are drawn in number order.
    """
    out = image.convert("RGB")
    draw = ImageDraw.Draw(out)
    font = _font()
    for box in sorted(boxes, key=lambda b: b.number):
        color = PALETTE[(box.number - 1) % len(PALETTE)]
        left, top = round(box.x * scale), round(box.y * scale)
        right, bottom = round((box.x + box.width) * scale) - 1, round((box.y + box.height) * scale) - 1
        draw.rectangle((left, top, max(left, right), max(top, bottom)), outline=color, width=_LINE)
        label = str(box.number)
        text_left, text_top, text_right, text_bottom = draw.textbbox((0, 0), label, font=font)
        tag_w, tag_h = text_right - text_left + 4, text_bottom - text_top + 4
        tag_top = top - tag_h if top - tag_h >= 0 else top
        draw.rectangle((left, tag_top, left + tag_w - 1, tag_top + tag_h - 1), fill=color)
        draw.text((left + 2 - text_left, tag_top + 2 - text_top), label, fill=(255, 255, 255), font=font)
    return out


def encode_smallest(image: Image.Image) -> EncodedImage:
    """Encode as PNG and as JPEG (quality 80) and keep the smaller.

    Flat UI screenshots are usually smaller as PNG (and stay sharp); photos, gradients and
    charts with anti-aliasing are usually smaller as JPEG.
    """
    rgb = image.convert("RGB")
    png, jpeg = io.BytesIO(), io.BytesIO()
    rgb.save(png, format="PNG", compress_level=6)
    rgb.save(jpeg, format="JPEG", quality=_JPEG_QUALITY)
    if len(png.getbuffer()) <= len(jpeg.getbuffer()):
        return EncodedImage(png.getvalue(), "image/png", rgb.width, rgb.height)
    return EncodedImage(jpeg.getvalue(), "image/jpeg", rgb.width, rgb.height)
