"""Where a page shows a variable's value as text: the boxes of the text runs that echo it.

A page may copy what was typed into ordinary text ("Coupon SPRING-2731-XQ applied"); the field
mask (``_mask.py``) cannot see that. ``_echoes.js`` lists every rendered text run of the page
(text nodes; a broken image's ``alt``; an empty field's ``placeholder``) with its boxes, walking
same-origin iframes and open shadow roots, in the library's isolated world (the one the snapshot
walker uses): the page's overrides of ``TreeWalker``, ``Range`` or ``getBoundingClientRect``
do not reach it. Python decides which runs echo a value with the call's redaction (the value in
any case, URL, HTML, JSON, base64 or Unicode form, as everywhere else), run by run and over each
block's joined text (a value split across ``<b>`` or ``<span>`` elements masks the block's runs).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from .._errors import SnapshotError

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
    """The boxes of the page's text runs that show a value ``variables`` hides.

    Raises :class:`SnapshotError` when the page cannot be read (closing, navigating): a
    screenshot whose text could not be checked is not taken, rather than taken unmasked.
    """
    try:
        session = await page.context.new_cdp_session(page)
    except Exception as exc:
        raise SnapshotError(f"Could not read the page's text to mask variable values ({type(exc).__name__}); "
                            "no screenshot was taken.") from exc
    try:
        tree = await session.send("Page.getFrameTree")
        world = await session.send("Page.createIsolatedWorld", {"frameId": tree["frameTree"]["frame"]["id"], "worldName": _WORLD})
        reply = await session.send("Runtime.evaluate", {"expression": f"({_source()})()",
                                                        "contextId": world["executionContextId"], "returnByValue": True})
    except Exception as exc:
        raise SnapshotError(f"Could not read the page's text to mask variable values ({type(exc).__name__}); "
                            "no screenshot was taken.") from exc
    finally:
        try:
            await session.detach()
        except Exception:  # the page closed meanwhile: the session went with it
            pass
    if "exceptionDetails" in reply:
        raise SnapshotError("The variable-value mask failed in the page; no screenshot was taken: "
                            f"{reply['exceptionDetails'].get('text', '')}")
    found = reply["result"]["value"]
    runs: list[list[Any]] = found["runs"]
    boxes = [(x - _PAD, y - _PAD, w + 2 * _PAD, h + 2 * _PAD)
             for index in sorted(_echoing(runs, variables)) for x, y, w, h in runs[index][2]]
    return EchoBoxes(boxes, float(found["dpr"] or 1.0), (float(found["sx"]), float(found["sy"])))
