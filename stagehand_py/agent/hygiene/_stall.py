"""Stall detection: page signatures and repeated identical actions, escalating nudges at 3, 5
and 8 stalled steps, then a forced finish."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..._util import normalise_url

__all__ = ["NUDGE_LEVELS", "StallDetector", "StallState", "action_signature", "page_signature"]

#: Stalled-step counts at which the model is nudged; after the last one it must finish.
NUDGE_LEVELS: tuple[int, ...] = (3, 5, 8)


def page_signature(url: str, outline: str) -> str:
    """A short hash of the normalised URL and the outline text, less where the focus is (a click
    moves the focus to what it clicked: that alone is no change of the page)."""
    h = hashlib.sha256(normalise_url(url).encode())
    h.update(b"\0")
    h.update(hashlib.sha256(outline.replace(" [focused]", "").encode()).digest())
    return h.hexdigest()[:16]


def action_signature(tool: str, args: Mapping[str, Any]) -> str:
    """The tool and its arguments, canonically: identical calls give identical signatures."""
    return tool + ":" + json.dumps(args, sort_keys=True, default=str, separators=(",", ":"))


@dataclass(frozen=True)
class StallState:
    """What the stall detector says after a step."""

    stalled_steps: int
    #: The nudge level reached at this step (1, 2 or 3), announced once; ``None`` otherwise.
    nudge: int | None
    #: True once the last level was reached: only done/fail are offered from now on.
    force_finish: bool


class StallDetector:
    """Counts consecutive steps that changed nothing.

    A step is *stalled* when the page signature after it equals the one before it, or when it
    repeats the previous step's action exactly. A step that changes the page and is not a
    repetition resets the count (and re-arms the nudges). ``levels`` are the counts at which
    the nudges fire; reaching the last one sets ``force_finish`` for good.
    """

    def __init__(self, levels: Sequence[int] = NUDGE_LEVELS) -> None:
        if list(levels) != sorted(set(levels)) or not levels or levels[0] < 1:
            raise ValueError(f"levels must be increasing positive step counts, got {levels!r}")
        self.levels = tuple(levels)
        self._count = 0
        self._announced = 0
        self._force = False
        self._last_action: str | None = None

    @property
    def stalled_steps(self) -> int:
        return self._count

    @property
    def force_finish(self) -> bool:
        return self._force

    def record(self, *, before: str, after: str, action: str) -> StallState:
        repeated = action == self._last_action
        self._last_action = action
        if before == after or repeated:
            self._count += 1
        else:
            self._count = 0
            self._announced = 0
        nudge: int | None = None
        for level, threshold in enumerate(self.levels, start=1):
            if self._count >= threshold and self._announced < level:
                self._announced = level
                nudge = level
        if self._announced >= len(self.levels):
            self._force = True
        return StallState(self._count, nudge, self._force)
