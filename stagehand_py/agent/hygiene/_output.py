"""The task's output: a ``done`` output checked against the caller's schema, and how many items
the collected data holds (``expected_items``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema
from pydantic import BaseModel, ValidationError

__all__ = ["check_done_output", "item_count"]


def check_done_output(output: Any, schema: type[BaseModel] | dict[str, Any] | None) -> tuple[Any, list[str]]:
    """Validate a ``done`` output: ``(value, problems)``; ``problems`` empty when it fits.

    With a pydantic model the value becomes an instance; with a JSON Schema it stays data.
    With no schema anything goes (``None`` included).
    """
    if schema is None:
        return output, []
    if output is None:
        return None, ["done needs an 'output' matching the required output schema; it was missing"]
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        try:
            return schema.model_validate(output), []
        except ValidationError as exc:
            return output, [
                "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e["loc"]) + ": " + e["msg"]
                for e in exc.errors(include_url=False)[:20]
            ]
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(output), key=lambda e: list(e.absolute_path))
    return output, [
        "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path) + ": " + e.message
        for e in errors[:20]
    ]


def item_count(data: Any) -> int | None:
    """How many items ``data`` holds: the length of a list, or of the only list value of an
    object (``{"items": [a, b], "pages_seen": 3}`` holds 2); ``None`` when it is not clear."""
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="python")
    if isinstance(data, list):
        return len(data)
    if isinstance(data, Mapping):
        lists = [v for v in data.values() if isinstance(v, list)]
        if len(lists) == 1:
            return len(lists[0])
    return None
