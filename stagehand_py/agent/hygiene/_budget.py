"""The step and time budget: one-time warnings at 75% and 90% of the steps, the last step, the
wall-clock deadline."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["StepBudget"]


@dataclass
class StepBudget:
    """Steps and wall time. ``warnings(step)`` yields each threshold once.

    ``step`` counts from 1. With ``max_steps=20`` the 75% warning comes at step 15 and the 90%
    warning at step 18; step 20 is the last (only done/fail are offered there).
    """

    max_steps: int
    deadline: float | None = None  # a time.monotonic() value
    thresholds: tuple[float, ...] = (0.75, 0.9)
    _given: set[float] = field(default_factory=set)

    def warnings(self, step: int) -> list[float]:
        """Thresholds crossed at ``step`` that were not announced before (each at most once)."""
        out: list[float] = []
        for t in self.thresholds:
            if t not in self._given and step >= max(1, int(self.max_steps * t + 0.5)) and step < self.max_steps:
                self._given.add(t)
                out.append(t)
        return out

    def is_last(self, step: int) -> bool:
        return step >= self.max_steps

    def remaining(self, step: int) -> int:
        return max(0, self.max_steps - step)

    def out_of_time(self, now: float) -> bool:
        return self.deadline is not None and now >= self.deadline
