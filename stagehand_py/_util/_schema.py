"""JSON Schema helpers: a schema as a dict, local ``$defs`` references resolved. Only local
references are followed: the library fetches nothing a schema points to."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

__all__ = ["inline_refs", "schema_dict"]


def schema_dict(schema: type[BaseModel] | dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of a pydantic model class, or a dict schema as given."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    return schema


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with local ``#/$defs/...`` (and ``#/definitions/...``) references replaced by
    their definitions, so it can be embedded under another schema. Recursive definitions stay
    references (expanding them would never end)."""
    defs = schema.get("$defs") or schema.get("definitions") or {}

    def walk(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(("#/$defs/", "#/definitions/")):
                name = ref.rsplit("/", 1)[1]
                if name in defs and name not in seen:
                    merged = {**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}
                    return walk(merged, (*seen, name))
            return {k: walk(v, seen) for k, v in node.items() if k not in ("$defs", "definitions")}
        if isinstance(node, list):
            return [walk(v, seen) for v in node]
        return node

    inlined: dict[str, Any] = walk(schema, ())
    return inlined
