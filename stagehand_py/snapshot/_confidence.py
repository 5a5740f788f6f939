"""The DOM-confidence score: how much of a page the accessibility outline can tell a model.

The measuring and the formula live in ``_confidence.js`` (in-page, where the boxes, roles and
names are at hand); this module loads it, runs it, and types its answer. Every rule and weight
is documented at the top of that file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any

from .._errors import InvalidArgumentError, SnapshotError
from ._aria import with_aria

__all__ = [
    "LOW_CONFIDENCE",
    "DomConfidence",
    "confidence_function",
    "measure_dom_confidence",
    "measure_over_cdp",
    "parse_confidence",
]

#: Below this score ``vision="auto"`` adds an annotated screenshot to observe/act.
LOW_CONFIDENCE = 0.6


@dataclass(frozen=True, slots=True)
class DomConfidence:
    """The score (0..1) and what it was computed from (see ``_confidence.js`` for the formula).

    - ``canvas_share``: visible canvas area / area looked at;
    - ``interactive`` / ``unnamed``: controls, and those without an accessible name;
    - ``graphics``: pixel-only indicators (unnamed SVGs with no text beside them, imgs without alt);
    - ``semantic``: nodes the outline can say something about;
    - ``factors``: the four multiplied factors (``canvas``, ``unnamed``, ``graphics``, ``sparse``);
    - ``computed``: always False: roles and names come from the library's own ARIA rules on every
      page (kept so code reading it keeps working).
    """

    score: float
    canvas_share: float = 0.0
    interactive: int = 0
    unnamed: int = 0
    graphics: int = 0
    semantic: int = 0
    elements: int = 0
    factors: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    computed: bool = False

    @property
    def low(self) -> bool:
        """True when the score is below :data:`LOW_CONFIDENCE`."""
        return self.score < LOW_CONFIDENCE


@cache
def confidence_function() -> str:
    """The in-page function (``this`` = a Document or an Element) as JavaScript source."""
    return with_aria(resources.files(__package__).joinpath("_confidence.js").read_text(encoding="utf-8").strip())


def parse_confidence(value: Any) -> DomConfidence:
    """Type the in-page function's answer; a malformed one is a bug, reported with the value."""
    try:
        return DomConfidence(
            score=float(value["score"]),
            canvas_share=float(value["canvasShare"]),
            interactive=int(value["interactive"]),
            unnamed=int(value["unnamed"]),
            graphics=int(value["graphics"]),
            semantic=int(value["semantic"]),
            elements=int(value["elements"]),
            factors=MappingProxyType({str(k): float(v) for k, v in value["factors"].items()}),
            computed=bool(value["computed"]),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InvalidArgumentError(f"not a DOM-confidence measurement: {value!r}") from exc


async def measure_dom_confidence(page: Any) -> DomConfidence:
    """Measure the main frame of a Playwright ``page`` (open shadow roots and same-origin frames in).

    The snapshot computes the same score on every capture (``Snapshot.dom_confidence``); use this
    for the full breakdown.
    """
    value = await page.evaluate("() => (" + confidence_function() + ").call(document)")
    return parse_confidence(value)


async def measure_over_cdp(session: Any, *, object_id: str | None = None, context: int | None = None) -> DomConfidence:
    """Measure over a CDP session: the main frame's document, or the element ``object_id`` names.

    ``context``: the execution context to measure the document in (the snapshot passes its own
    isolated world, so a page that overrides the DOM's built-ins cannot forge the score; an
    ``object_id`` from that world runs there too).
    """
    if object_id is None:
        params: dict[str, Any] = {"expression": "(" + confidence_function() + ").call(document)", "returnByValue": True}
        if context is not None:
            params["contextId"] = context
        reply = await session.send("Runtime.evaluate", params)
    else:
        reply = await session.send(
            "Runtime.callFunctionOn", {"functionDeclaration": confidence_function(), "objectId": object_id, "returnByValue": True}
        )
    if "exceptionDetails" in reply:
        details = reply["exceptionDetails"]
        raise SnapshotError(
            "The DOM-confidence measurement failed in the page: "
            f"{details.get('text', '')} {details.get('exception', {}).get('description', '')}".strip()
        )
    return parse_confidence(reply["result"].get("value"))
