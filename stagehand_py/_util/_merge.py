"""Deep merge of JSON-like data: one recursion, with the policy for lists and for conflicting
values chosen by the caller (the agent's ``save_progress`` appends and takes the newer value;
extract's partial answers take the union and keep the first value found)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

__all__ = ["deep_merge"]


def _newer(base: Any, update: Any) -> Any:
    return update


def deep_merge(
    base: Any,
    update: Any,
    *,
    lists: Literal["append", "union"] = "append",
    values: Callable[[Any, Any], Any] = _newer,
) -> Any:
    """``update`` merged into a copy of ``base``: dicts recurse; two lists are appended
    (``"union"``: only the items of ``update`` not already in ``base``); anything else (or a
    type mismatch) is ``values(base, update)``, by default ``update``. Neither argument is
    modified."""
    if isinstance(base, dict) and isinstance(update, dict):
        out = _copy(base)
        for key, value in update.items():
            out[key] = deep_merge(base[key], value, lists=lists, values=values) if key in base else _copy(value)
        return out
    if isinstance(base, list) and isinstance(update, list):
        added = update if lists == "append" else [item for item in update if item not in base]
        return [*_copy(base), *_copy(added)]
    return _copy(values(base, update))


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
