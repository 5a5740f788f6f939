"""Vision for observe/act/extract: when to add a screenshot, and adding it to a request.

``vision="auto"`` (default): the first request carries an annotated screenshot when the page's
DOM confidence is below :data:`~stagehand_py._vision.LOW_CONFIDENCE`; otherwise, when the
model finds no element in the outline, one more request carries it (the fallback). ``True``:
every request carries it. ``False``: never. A model without image input
(``profile.supports_images=False``) is an error with ``True`` and skips vision with ``"auto"``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any, Literal, TypeAlias, TypeVar

from .._errors import ConfigurationError, InvalidArgumentError
from .._prompts.common import Fence
from .._prompts.vision import EXTRACT_SCREENSHOT_NOTE, VISION_SYSTEM_NOTE, screenshot_legend
from .._secrets import VariableSet
from .._vision import LOW_CONFIDENCE, annotated_screenshot, page_screenshot
from ..llm import ImagePart, LLMClient
from ..snapshot import Snapshot

__all__ = ["VisionMode", "check_vision", "model_sees", "plan_requests", "require_sight", "with_annotated_screenshot",
           "with_page_screenshot"]

logger = logging.getLogger("stagehand_py._operations")

VisionMode: TypeAlias = Literal["auto"] | bool
T = TypeVar("T")


def check_vision(vision: Any, what: str) -> None:
    if vision != "auto" and not isinstance(vision, bool):
        raise InvalidArgumentError(f"{what}(vision=...) takes 'auto', True or False, got {vision!r}.")


def model_sees(client: LLMClient) -> bool:
    """False when the model's profile says it takes no images (a model with no profile is trusted)."""
    profile = getattr(client.model, "profile", None)
    return bool(getattr(profile, "supports_images", getattr(client.model, "supports_images", True)))


def require_sight(client: LLMClient, what: str) -> None:
    if not model_sees(client):
        raise ConfigurationError(
            f"{what} sends a screenshot, but the model {client.model_name!r} is configured without image input "
            "(profile.supports_images=False). Use a model that accepts images, pass "
            "profile=Profile(..., supports_images=True) if it does, or leave vision at 'auto' / screenshot off."
        )


def plan_requests(chunks: Sequence[T], vision: VisionMode, *, confidence: float | None, sees: bool) -> Iterator[tuple[T, bool]]:
    """(chunk, with screenshot?) for each request; the caller stops once a request finds something.

    After the chunks, ``"auto"`` adds one fallback request (the first chunk with the screenshot)
    when no request carried one yet and the model can see.
    """
    first = vision is True or (vision == "auto" and sees and confidence is not None and confidence < LOW_CONFIDENCE)
    for chunk in chunks:
        yield chunk, first
    if vision == "auto" and sees and not first and chunks:
        logger.info("no element found in the outline; asking again with an annotated screenshot")
        yield chunks[0], True


async def with_annotated_screenshot(page: Any, snapshot: Snapshot, system: str, user: str, fence: Fence, *,
                                    variables: VariableSet) -> tuple[str, str, list[ImagePart]]:
    """``system``/``user`` with the vision note and the box legend, and the annotated screenshot.

    The legend's outline lines are redacted with ``variables``, as the outline itself: a field's
    line shows its value, which may be a secret typed a moment ago; in the image such a field is
    masked."""
    shot = await annotated_screenshot(page, snapshot, variables=variables)
    legend = [(box.number, variables.redact(snapshot.line_for(box.element_id) or f"[{box.element_id}]")) for box in shot.boxes]
    logger.debug("annotated screenshot: %r, ~%d tokens", shot, shot.tokens)
    return f"{system}\n\n{VISION_SYSTEM_NOTE}", f"{user}\n\n{screenshot_legend(legend, fence)}", [shot.image_part()]


async def with_page_screenshot(page: Any, system: str, *, selector: str | None,
                               variables: VariableSet | None = None) -> tuple[str, list[ImagePart]]:
    """``system`` with the extract note, and a screenshot of the page or the ``selector`` region
    (fields holding a value of ``variables`` masked)."""
    shot = await page_screenshot(page, selector=selector, variables=variables)
    logger.debug("extract screenshot: %r, ~%d tokens", shot, shot.tokens)
    return f"{system}\n\n{EXTRACT_SCREENSHOT_NOTE}", [shot.image_part()]
