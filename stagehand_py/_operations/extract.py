"""extract(): structured data from the page, in one model call per page part.

- The caller's schema (pydantic class or JSON Schema) is sent inside a wrapper object
  ``{"data": <schema>, "instruction_satisfied": bool}``: the data and the "am I done?" answer
  come back together (the TS anchor spends a second call on the latter). A non-object schema
  needs no extra wrapping: it is simply the type of ``data``.
- URL fields (``format: uri`` / pydantic ``HttpUrl``, ``AnyUrl``) travel as element ids; the
  answer's ids are replaced by the absolute URLs of the snapshot's url map (as the browser
  resolves the ``href``). A model that answers with one of the page's link URLs instead is
  taken at its word; anything else that is not a link is sent back to the model (re-ask).
- A page whose outline exceeds the chunk budget is read part by part, the parts ranked by
  relevance to the instruction and the schema (field names, and above all the literal values
  the instruction names, such as a row's label): best first. Reading stops once the model says
  the instruction is satisfied, or once a list-free schema has every field filled (a lookup);
  a list the model says goes on walks every part. Results are merged in page order (lists
  concatenated without repeats, objects merged key by key, the first non-empty scalar kept).
- When required fields stay empty, or every field is (only blank strings and nulls), while the
  page is still changing (late content), the page is read again as it changes, up to
  ``dom_settle_timeout`` (:func:`._pipeline.look`).
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

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
from ._pipeline import PageRead, ask_parts, look, read_page, split_page
from ._vision import require_sight, with_page_screenshot

__all__ = ["absent_as_none", "all_empty", "complete", "empty_required", "extract", "map_urls", "merge", "schema_words", "to_wire_schema"]

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
        if not data.strip():
            return data  # "no such link": absent, not a link to check (see absent_as_none)
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


def _url_key(url: str) -> str:
    """``url`` compared loosely: scheme and host in lower case, no trailing slash on the path."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), parts.query, parts.fragment))


def _lookup(snapshot: Snapshot) -> Callable[[str], str | None]:
    """Maps a URL field's answer to the link's URL as the browser resolves it (the url map's).

    The answer should be a link's element id; a model that copies the link's URL instead (whole,
    relative as written in the href, or without its trailing slash) names a link too, and gets
    the page's own URL for it. Anything else is not a link of the page (None: re-asked).
    """
    urls = set(snapshot.url_map.values())
    loose = {_url_key(url): url for url in sorted(urls, reverse=True)}

    def lookup(value: str) -> str | None:
        eid = element_id(value, snapshot)
        if eid is not None and eid in snapshot.url_map:
            return snapshot.url_map[eid]
        if value in urls:
            return value
        if not isinstance(value, str) or not value.strip() or eid is not None:
            return None
        return loose.get(_url_key(urljoin(snapshot.url, value.strip())))

    return lookup


def _validate(data: Any, schema: dict[str, Any], model: type[BaseModel] | None) -> tuple[list[str], Any]:
    """The caller's schema judges the data (llm/_structured.py owns the check and its wording)."""
    return validation_errors(data, schema, model, root="$.data", limit=10)


def empty_required(data: Any, schema: Any, root: dict[str, Any], path: str = "data") -> list[str]:
    """Paths of required fields of ``data`` that hold nothing (null, "", [] or {}): what the
    page did not show (yet). Objects are followed; list items are not."""
    node = deref(schema, root)
    if not isinstance(node, dict) or not isinstance(data, dict):
        return []
    props = node.get("properties", {})
    found: list[str] = []
    for key in node.get("required", []):
        value = data.get(key)
        if _empty(value):
            found.append(f"{path}.{key}")
        elif key in props:
            found += empty_required(value, props[key], root, f"{path}.{key}")
    return found


def _nullable(node: Any, root: dict[str, Any], depth: int = 0) -> bool:
    node = deref(node, root)
    if depth > 16 or not isinstance(node, dict):
        return False
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(_nullable(branch, root, depth + 1) for branch in node.get("anyOf", []) + node.get("oneOf", []))


def _object_node(node: Any, root: dict[str, Any]) -> dict[str, Any]:
    """``node``, or the branch of its ``anyOf``/``oneOf`` that describes an object (``Optional[Model]``)."""
    node = deref(node, root)
    if not isinstance(node, dict) or node.get("properties"):
        return node if isinstance(node, dict) else {}
    for branch in node.get("anyOf", []) + node.get("oneOf", []):
        branch = deref(branch, root)
        if isinstance(branch, dict) and branch.get("properties"):
            return branch
    return node


def absent_as_none(data: Any, schema: Any, root: dict[str, Any], depth: int = 0) -> Any:
    """``data`` with "not on the page" said as the schema allows: a blank string in a nullable
    field becomes None, in an optional (not required) one the field is left out; never ''."""
    if depth > 32:
        return data
    node = _object_node(schema, root)
    if isinstance(data, dict):
        props = node.get("properties", {})
        required = set(node.get("required", []))
        out: dict[str, Any] = {}
        for key, value in data.items():
            sub = props.get(key)
            if sub is not None and isinstance(value, str) and not value.strip():
                if _nullable(sub, root):
                    out[key] = None
                elif key in required:
                    out[key] = value
                continue
            out[key] = absent_as_none(value, sub, root, depth + 1) if sub is not None else value
        return out
    if isinstance(data, list):
        items = deref(node.get("items"), root)
        return [absent_as_none(value, items, root, depth + 1) for value in data] if isinstance(items, dict) else data
    return data


def all_empty(data: Any) -> bool:
    """True when ``data`` holds no value at all: only null, blank strings, empty lists and objects."""
    if isinstance(data, dict):
        return all(all_empty(value) for value in data.values())
    if isinstance(data, list):
        return all(all_empty(value) for value in data)
    if isinstance(data, str):
        return not data.strip()
    return data is None


def _has_list(node: Any, root: dict[str, Any], depth: int = 0) -> bool:
    node = deref(node, root)
    if depth > 16 or not isinstance(node, dict):
        return False
    if node.get("type") == "array" or "items" in node:
        return True
    children = list(node.get("properties", {}).values()) + node.get("anyOf", []) + node.get("oneOf", []) + node.get("allOf", [])
    return any(_has_list(child, root, depth + 1) for child in children)


def complete(data: Any, schema: dict[str, Any]) -> bool:
    """True when ``data`` holds every field of a list-free ``schema``: a lookup is answered and
    the rest of the page need not be read. A schema with a list never is (the model decides)."""
    if _has_list(schema, schema):
        return False

    def filled(value: Any, node: Any) -> bool:
        node = deref(node, schema)
        if _empty(value):
            return False
        if isinstance(value, dict) and isinstance(node, dict):
            return all(filled(value.get(key), sub) for key, sub in node.get("properties", {}).items())
        return True

    return filled(data, schema)


def schema_words(schema: dict[str, Any]) -> str:
    """The field names and titles of ``schema`` (a hint of what the page part must hold)."""
    words: list[str] = []

    def walk(node: Any, depth: int) -> None:
        if depth > 16 or not isinstance(node, dict):
            return
        for key, sub in node.get("properties", {}).items():
            words.append(key.replace("_", " "))
            walk(sub, depth + 1)
        for key in ("items", "additionalProperties"):
            walk(node.get(key), depth + 1)
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in node.get(key, []):
                walk(sub, depth + 1)
        for sub in node.get("$defs", {}).values():
            walk(sub, depth + 1)

    walk(schema, 0)
    return " ".join(dict.fromkeys(words))


@dataclass
class _Reading:
    """One reading of the page (all parts asked until done): the merged data and the calls made."""

    merged: Any
    calls: int


async def extract(ctx: OperationContext, instruction: str | None, schema: Any, *, selector: str | None,
                  screenshot: bool = False) -> Any:
    if instruction is None and schema is None:
        snapshot = await ctx.snapshot(selector=selector)
        return {"page_text": snapshot.tree}
    join_strings = schema is None
    user, model = user_schema(schema) if schema is not None else (copy.deepcopy(_DEFAULT_SCHEMA), None)
    text = instruction or DEFAULT_EXTRACT_INSTRUCTION
    client = ctx.get_client()
    if screenshot:
        require_sight(client, "extract(screenshot=True)")
    images: list[ImagePart] = []
    screenshot_note = ""
    # Room for what earlier parts gave (shown to the model so it can say it is done).
    earlier_reserve = ctx.token_budget // 8
    hints = schema_words(user) if schema is not None else ""

    async def read() -> PageRead:
        nonlocal screenshot_note, images
        page = await read_page(ctx, selector=selector)
        if screenshot:  # of the page as read, once per read; every part's request carries it
            screenshot_note, images = await with_page_screenshot(ctx.page, "", selector=selector,
                                                                variables=ctx.variables)
        return page

    async def attempt(page: PageRead) -> _Reading:
        lookup = _lookup(page.snapshot)
        # Part index -> what it gave; merged in page order, whatever order the parts were asked in.
        given: dict[int, Any] = {}
        asking = 0

        def merged() -> Any:
            out: Any = None
            for index in sorted(given):
                out = given[index] if out is None else merge(out, given[index], join_strings=join_strings)
            return out

        def prompt(fence: Fence, outline: str, part: tuple[int, int] | None) -> tuple[str, str]:
            nonlocal asking
            asking = part[0] - 1 if part is not None else 0
            earlier = None
            if given:
                earlier = json.dumps(merged(), ensure_ascii=False, default=str)
                if len(earlier) > earlier_reserve * 4 - 40:
                    earlier = earlier[: earlier_reserve * 4 - 40] + " …(truncated)"
            return (extract_system(fence) + screenshot_note,
                    extract_user(text, outline, fence, part=part, earlier=earlier))

        # The reserve also covers the few words that introduce the earlier data.
        parts = split_page(ctx, page.text, prompt, to_wire_schema(user), rank_by=text, hints=hints,
                           extra_reserve=earlier_reserve + 30)
        wire = to_wire_schema(user, partial=parts.total > 1)

        def check(out: dict[str, Any]) -> tuple[list[str], tuple[Any, bool]]:
            problems: list[str] = []
            mapped = map_urls(out["data"], user, user, lookup, problems)
            if problems:
                return problems, (None, False)
            mapped = absent_as_none(mapped, user, user)
            errors, _ = _validate(mapped, user, model)
            if errors and parts.total == 1:
                return errors, (None, False)  # a part of a long page may lack required fields; judged after merging
            return [], (mapped, bool(out.get("instruction_satisfied")))

        def done(answer: tuple[Any, bool]) -> bool:
            data, satisfied = answer
            given[asking] = data
            return satisfied or (schema is not None and complete(merged(), user))

        answers = await ask_parts(ctx, page, parts, prompt=prompt, output=wire, purpose="extract", check=check,
                                  done=done, images=images)
        logger.info("extract %r: %d call(s) over %d part(s)", text, len(answers), parts.total)
        return _Reading(merged(), len(answers))

    def found(reading: _Reading) -> bool:
        # An answer of nothing but empty strings is what a page still rendering gives, as much as
        # an empty required field is: looked for again while the page can change by itself.
        return (not _validate(reading.merged, user, model)[0] and not empty_required(reading.merged, user, user)
                and not all_empty(reading.merged))

    looked = await look(ctx, read, attempt, found)
    reading = looked.value
    errors, value = _validate(reading.merged, user, model)
    waited = f" (after waiting {looked.waited:.1f} s for the page to change)" if looked.waited else ""
    if errors:
        raise OutputValidationError(
            f"the data extracted from {reading.calls} part(s) of the page{waited} does not fit the schema: "
            f"{'; '.join(errors[:5])}. Make fields optional that a page may lack, or narrow the page with selector=.",
            last_output=reading.merged, attempts=reading.calls, usage=None, errors=errors,
        )
    if looked.waited:
        logger.info("extract %r: %s still empty%s", text, ", ".join(empty_required(reading.merged, user, user)), waited)
    return value
