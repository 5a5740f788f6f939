"""extract(): structured data from the page, in one model call per page part.

- The caller's schema (pydantic class or JSON Schema) is sent inside a wrapper object
  ``{"data": <schema>, "instruction_satisfied": bool}``: the data and the "am I done?" answer
  come back together (the TS anchor spends a second call on the latter). A non-object schema
  needs no extra wrapping: it is simply the type of ``data``.
- URL fields (``format: uri`` / pydantic ``HttpUrl``, ``AnyUrl``) travel as element ids; the
  answer's ids are replaced by the absolute URLs of the snapshot's url map. An id that is
  not a link is sent back to the model (re-ask).
- A page whose outline exceeds the chunk budget is read part by part in page order; results
  are merged (lists concatenated without repeats, objects merged key by key, the first
  non-empty scalar kept) and reading stops once the model says the instruction is satisfied.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from .._errors import InvalidSchemaError, OutputValidationError
from .._prompts.common import Fence
from .._prompts.extract import (
    DATA_DESCRIPTION,
    DEFAULT_EXTRACT_INSTRUCTION,
    EXTRACTION_DESCRIPTION,
    SATISFIED_DESCRIPTION,
    URL_FIELD_DESCRIPTION,
    extract_system,
    extract_user,
)
from .._util import deep_merge, deref, pop_defs, schema_dict
from ..llm import ImagePart
from ..llm._structured import check_json_schema, validation_errors
from ..snapshot import Snapshot
from ._answers import element_id
from ._context import OperationContext
from ._pipeline import ask_parts, read_page, split_page
from ._vision import require_sight, with_page_screenshot

__all__ = ["extract", "map_urls", "merge", "to_wire_schema"]

logger = logging.getLogger("stagehand_py._operations")

_URL_FORMATS = frozenset({"uri", "iri", "uri-reference", "iri-reference", "url"})
_DEFAULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"extraction": {"type": "string", "description": EXTRACTION_DESCRIPTION}},
    "required": ["extraction"],
    "additionalProperties": False,
}


# --- schema handling (pure) ---------------------------------------------------------------


def user_schema(schema: Any) -> tuple[dict[str, Any], type[BaseModel] | None]:
    """The JSON Schema of ``schema`` and the pydantic class when there is one; InvalidSchemaError otherwise."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema_dict(schema), schema
    if isinstance(schema, dict):
        check_json_schema(schema, what="extract(schema=...)")
        return copy.deepcopy(schema), None
    raise InvalidSchemaError(
        f"extract(schema=...) must be a pydantic model class or a JSON Schema dict, not {type(schema).__name__}."
    )


def _is_url(node: Any) -> bool:
    return isinstance(node, dict) and node.get("type") == "string" and node.get("format") in _URL_FORMATS


def _to_ids(node: Any) -> Any:
    if isinstance(node, list):
        return [_to_ids(n) for n in node]
    if not isinstance(node, dict):
        return node
    if _is_url(node):
        return {k: v for k, v in (("title", node.get("title")),) if v} | {"type": "string", "description": URL_FIELD_DESCRIPTION}
    return {k: (_to_ids(v) if k not in ("enum", "const", "required", "default", "examples") else v) for k, v in node.items()}


def _relax(node: Any) -> Any:
    """``node`` without ``required`` lists: one part of a long page may hold only some fields."""
    if isinstance(node, list):
        return [_relax(n) for n in node]
    if not isinstance(node, dict):
        return node
    return {k: (_relax(v) if k not in ("enum", "const", "default", "examples") else v) for k, v in node.items()
            if not (k == "required" and isinstance(v, list))}


def to_wire_schema(schema: dict[str, Any], *, partial: bool = False) -> dict[str, Any]:
    """The wrapper object the model answers: URL fields as id strings, plus ``instruction_satisfied``.

    ``partial`` (long pages read in parts) drops the ``required`` lists of the data: a part
    answers what it holds; the merged result is checked against the full schema at the end.
    """
    data = _to_ids(copy.deepcopy(schema))
    if partial:
        data = _relax(data)
    defs = pop_defs(data)
    if "$ref" not in data:
        data.setdefault("description", DATA_DESCRIPTION)
    wire: dict[str, Any] = {
        "type": "object",
        "properties": {"data": data, "instruction_satisfied": {"type": "boolean", "description": SATISFIED_DESCRIPTION}},
        "required": ["data", "instruction_satisfied"],
        "additionalProperties": False,
        **defs,
    }
    return wire


def map_urls(data: Any, schema: Any, root: dict[str, Any], lookup: Callable[[str], str | None],
             problems: list[str], path: str = "data") -> Any:
    """``data`` with every URL field's element id replaced by ``lookup(id)``; problems collected."""
    node = deref(schema, root)
    if not isinstance(node, dict):
        return data
    if isinstance(data, str) and (_is_url(node) or any(_is_url(deref(b, root)) for b in node.get("anyOf", []) + node.get("oneOf", []))):
        url = lookup(data)
        if url is None:
            problems.append(f"{path}: {data!r} is not the id of a link in the outline; give the id of the link "
                            "element as written in brackets at the start of its outline line, or null/empty when "
                            "there is no such link")
            return data
        return url
    if isinstance(data, dict):
        props = node.get("properties", {})
        extra = node.get("additionalProperties")
        out = {}
        for key, value in data.items():
            sub = props.get(key, extra if isinstance(extra, dict) else None)
            out[key] = map_urls(value, sub, root, lookup, problems, f"{path}.{key}") if sub is not None else value
        for branch in node.get("allOf", []):
            out = map_urls(out, branch, root, lookup, problems, path)
        if not props:
            for branch in node.get("anyOf", []) + node.get("oneOf", []):
                if isinstance(deref(branch, root), dict) and deref(branch, root).get("properties"):
                    return map_urls(out, branch, root, lookup, problems, path)
        return out
    if isinstance(data, list):
        items = node.get("items")
        if items is None:
            for branch in node.get("anyOf", []) + node.get("oneOf", []):
                if isinstance(deref(branch, root), dict) and "items" in deref(branch, root):
                    items = deref(branch, root)["items"]
                    break
        if isinstance(items, dict):
            return [map_urls(v, items, root, lookup, problems, f"{path}[{i}]") for i, v in enumerate(data)]
    return data


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def merge(a: Any, b: Any, *, join_strings: bool = False) -> Any:
    """Merge two partial extractions (see the module docstring)."""

    def first_found(x: Any, y: Any) -> Any:
        if _empty(x):
            return y
        if join_strings and isinstance(x, str) and isinstance(y, str) and y and y not in x:
            return f"{x}\n{y}"
        return x

    return deep_merge(a, b, lists="union", values=first_found)


# --- the operation ---------------------------------------------------------------------------


def _lookup(snapshot: Snapshot) -> Callable[[str], str | None]:
    urls = set(snapshot.url_map.values())

    def lookup(value: str) -> str | None:
        eid = element_id(value, snapshot)
        if eid is not None and eid in snapshot.url_map:
            return snapshot.url_map[eid]
        return value if value in urls else None  # the model copied the real URL: fine

    return lookup


def _validate(data: Any, schema: dict[str, Any], model: type[BaseModel] | None) -> tuple[list[str], Any]:
    """The caller's schema judges the data (llm/_structured.py owns the check and its wording)."""
    return validation_errors(data, schema, model, root="$.data", limit=10)


async def extract(ctx: OperationContext, instruction: str | None, schema: Any, *, selector: str | None,
                  screenshot: bool = False) -> Any:
    if instruction is None and schema is None:
        snapshot = await ctx.snapshot(selector=selector)
        return {"page_text": snapshot.tree}
    join_strings = schema is None
    user, model = user_schema(schema) if schema is not None else (copy.deepcopy(_DEFAULT_SCHEMA), None)
    wire = to_wire_schema(user)
    text = instruction or DEFAULT_EXTRACT_INSTRUCTION
    client = ctx.get_client()
    if screenshot:
        require_sight(client, "extract(screenshot=True)")
    page = await read_page(ctx, selector=selector)
    images: list[ImagePart] = []
    screenshot_note = ""
    if screenshot:  # of the page as read, once; every part's request carries it
        screenshot_note, images = await with_page_screenshot(ctx.page, "", selector=selector)
    lookup = _lookup(page.snapshot)
    # Room for what earlier parts gave (shown to the model so it can say it is done).
    earlier_reserve = ctx.token_budget // 8
    merged: Any = None

    def prompt(fence: Fence, outline: str, part: tuple[int, int] | None) -> tuple[str, str]:
        earlier = None
        if merged is not None:
            earlier = json.dumps(merged, ensure_ascii=False, default=str)
            if len(earlier) > earlier_reserve * 4 - 40:
                earlier = earlier[: earlier_reserve * 4 - 40] + " …(truncated)"
        return (extract_system(fence) + screenshot_note,
                extract_user(text, outline, fence, part=part, earlier=earlier))

    # The reserve also covers the few words that introduce the earlier data.
    parts = split_page(ctx, page.text, prompt, wire, rank_by=None, extra_reserve=earlier_reserve + 30)
    if parts.total > 1:
        wire = to_wire_schema(user, partial=True)

    def check(out: dict[str, Any]) -> tuple[list[str], tuple[Any, bool]]:
        problems: list[str] = []
        mapped = map_urls(out["data"], user, user, lookup, problems)
        if problems:
            return problems, (None, False)
        errors, _ = _validate(mapped, user, model)
        if errors and parts.total == 1:
            return errors, (None, False)  # a part of a long page may lack required fields; judged after merging
        return [], (mapped, bool(out.get("instruction_satisfied")))

    def done(answer: tuple[Any, bool]) -> bool:
        nonlocal merged
        data, satisfied = answer
        merged = data if merged is None else merge(merged, data, join_strings=join_strings)
        return satisfied

    answers = await ask_parts(ctx, page, parts, prompt=prompt, output=wire, purpose="extract", check=check, done=done,
                              images=images)
    calls = len(answers)
    logger.info("extract %r: %d call(s) over %d part(s)", text, calls, parts.total)
    errors, value = _validate(merged, user, model)
    if errors:
        raise OutputValidationError(
            f"the data extracted from {calls} part(s) of the page does not fit the schema: {'; '.join(errors[:5])}. "
            "Make fields optional that a page may lack, or narrow the page with selector=.",
            last_output=merged, attempts=calls, usage=None, errors=errors,
        )
    return value
