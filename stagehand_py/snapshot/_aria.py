"""Our ARIA role and accessible-name rules (``_aria.js``), inlined into the in-page functions
that need them (the snapshot walker, the DOM-confidence measure), so every part of the library
sees the same roles and names on every page."""

from __future__ import annotations

from functools import cache
from importlib import resources

__all__ = ["ARIA_MARKER", "aria_source", "with_aria"]

#: Where an in-page function wants the rules: ``const ARIA = __ARIA__;``.
ARIA_MARKER = "__ARIA__"


@cache
def aria_source() -> str:
    """The rules as one JavaScript expression evaluating to ``{roleOf(el), nameOf(el, role)}``."""
    return resources.files(__package__).joinpath("_aria.js").read_text(encoding="utf-8").strip()


def with_aria(function_source: str) -> str:
    """``function_source`` with its one :data:`ARIA_MARKER` replaced by the rules."""
    if function_source.count(ARIA_MARKER) != 1:
        raise AssertionError(f"an in-page function must use {ARIA_MARKER} exactly once")
    return function_source.replace(ARIA_MARKER, aria_source())
