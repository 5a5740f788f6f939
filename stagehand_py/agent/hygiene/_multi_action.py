"""Multi-action steps: when the rest of a chain of actions must not run."""

from __future__ import annotations

from collections.abc import Collection

from ..._util import normalise_url
from ...snapshot import parse_outline

__all__ = ["batch_abort_reason", "count_actionable"]


def count_actionable(outline: str, roles: Collection[str]) -> int:
    """Outline lines whose role is one of ``roles`` and that are not disabled."""
    return sum(1 for e in parse_outline(outline) if e.role in roles and "disabled" not in e.flags)


def batch_abort_reason(
    *, url_before: str, url_now: str, navigations: int, actionable_before: int, actionable_now: int, max_shift: float = 0.2
) -> str | None:
    """Why the rest of a multi-action batch must not run, or ``None`` when it may go on: a
    main-frame navigation, a changed URL, or a shift of more than ``max_shift`` (20%) in the
    number of actionable elements since the batch started."""
    if navigations:
        return "the page navigated"
    if normalise_url(url_before) != normalise_url(url_now):
        return f"the URL changed to {url_now}"
    if actionable_before == 0:
        shifted = actionable_now > 0
    else:
        shifted = abs(actionable_now - actionable_before) / actionable_before > max_shift
    if shifted:
        return f"the number of actionable elements changed from {actionable_before} to {actionable_now}"
    return None
