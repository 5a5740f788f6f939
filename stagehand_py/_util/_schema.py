"""JSON Schema helpers: a schema as a dict, local references (``#/$defs/...``) looked up or
inlined, definitions lifted out for wrapping. Only local references are followed: the library
fetches nothing a schema points to. (Extract's walkers follow references as they walk, with
their own ``deref`` in :mod:`stagehand_py._operations._extract_schema`.)"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

__all__ = ["inline_refs", "pop_defs", "ref_target", "schema_dict"]

#: Where a schema keeps its definitions (``definitions`` before draft 2019-09).
_DEFS_KEYS = ("$defs", "definitions")


def schema_dict(schema: type[BaseModel] | dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of a pydantic model class, or a dict schema as given."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    return schema


def ref_target(schema: Any, ref: str) -> Any:
    """What the local reference ``ref`` (``#``, or a JSON Pointer such as ``#/$defs/Item``)
    names inside ``schema``; :class:`KeyError` when it names nothing (or is not local)."""
    if ref == "#":
        return schema
    if not ref.startswith("#/"):
        raise KeyError(ref)
    node = schema
    for raw in ref[2:].split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            raise KeyError(ref)
    return node


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with local references replaced by what they name, so it can be embedded under
    another schema; the definitions themselves are dropped. Recursive definitions stay
    references (expanding them would never end)."""

    def walk(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/") and ref not in seen:
                try:
                    target = ref_target(schema, ref)
                except KeyError:
                    target = None
                if isinstance(target, dict):
                    merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
                    return walk(merged, (*seen, ref))
            return {k: walk(v, seen) for k, v in node.items() if k not in _DEFS_KEYS}
        if isinstance(node, list):
            return [walk(v, seen) for v in node]
        return node

    inlined: dict[str, Any] = walk(schema, ())
    return inlined


def pop_defs(schema: dict[str, Any]) -> dict[str, Any]:
    """Remove the definitions from ``schema`` (in place) and return them under their keys, for a
    wrapper schema to carry at its root: ``wire.update(pop_defs(inner))`` keeps every
    ``#/$defs/...`` reference of ``inner`` valid once it is nested."""
    return {key: schema.pop(key) for key in _DEFS_KEYS if key in schema}
