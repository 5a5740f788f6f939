"""Deep merge of JSON-like data."""

from __future__ import annotations

from typing import Any

__all__ = ["deep_merge"]


def deep_merge(base: Any, update: Any) -> Any:
    """``update`` merged into a copy of ``base``: lists append, dicts recurse, anything else
    (or a type mismatch) is replaced by ``update``. Neither argument is modified."""
    if isinstance(base, dict) and isinstance(update, dict):
        out = dict(base)
        for key, value in update.items():
            out[key] = deep_merge(base[key], value) if key in base else _copy(value)
        return out
    if isinstance(base, list) and isinstance(update, list):
        return [*_copy(base), *_copy(update)]
    return _copy(update)


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
