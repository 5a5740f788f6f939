"""The caller's schema for extract(), walked: what the model answers, and what its answers say.

Pure functions over a JSON Schema (local ``$ref`` followed with :func:`deref` as they walk)
and the data that should fit it:

- :func:`to_wire_schema`: the wrapper object the model answers (URL fields as element ids, plus
  ``instruction_satisfied``); :func:`map_urls` turns the ids back into the page's URLs
  (:func:`link_lookup`: an id, or a link URL the model copied, as the browser resolves it);
- :func:`absent_as_none`, :func:`empty_required`, :func:`all_empty`: what "not on the page" is
  and whether the page showed enough; :func:`answer_data` (URLs mapped, absent values said)
  and :func:`shows_data` (nothing required empty, not all blank) are what extract asks of them;
- :func:`complete`: a list-free schema's every field filled (a lookup answered);
- :func:`merge`: two parts' answers as one; :func:`schema_words`: the fields as ranking hints.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

from .._prompts.extract import DATA_DESCRIPTION, SATISFIED_DESCRIPTION, URL_FIELD_DESCRIPTION
from .._util import deep_merge, pop_defs, ref_target
from ..snapshot import Snapshot
from ._answers import element_id

__all__ = ["absent_as_none", "all_empty", "answer_data", "complete", "deref", "empty_required", "link_lookup", "map_urls",
           "merge", "schema_words", "shows_data", "to_wire_schema"]

_URL_FORMATS = frozenset({"uri", "iri", "uri-reference", "iri-reference", "url"})
def deref(node: Any, root: Any, *, max_hops: int = 32) -> Any:
    """``node`` with its local ``$ref`` followed (through chains, at most ``max_hops``); a
    reference that names nothing gives ``{}`` (a schema that allows anything)."""
    hops = 0
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/") and hops < max_hops:
        try:
            node = ref_target(root, node["$ref"])
        except KeyError:
            return {}
        hops += 1
    return node


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


def _url_key(url: str) -> str:
    """``url`` compared loosely: scheme and host in lower case, no trailing slash on the path."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), parts.query, parts.fragment))


def link_lookup(snapshot: Snapshot) -> Callable[[str], str | None]:
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


def answer_data(data: Any, schema: dict[str, Any], lookup: Callable[[str], str | None]) -> tuple[list[str], Any]:
    """The model's ``data`` as the caller gets it: URL fields' ids mapped to the page's URLs
    (:func:`map_urls`), "not on the page" said as the schema allows (:func:`absent_as_none`).
    With problems (an id that names no link), the data is not usable: the model is asked again."""
    problems: list[str] = []
    mapped = map_urls(data, schema, schema, lookup, problems)
    return problems, (None if problems else absent_as_none(mapped, schema, schema))


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


def shows_data(data: Any, schema: dict[str, Any]) -> bool:
    """True when ``data`` has every required field filled and is not all blank: what a page
    still rendering does not give yet (see :func:`empty_required`, :func:`all_empty`)."""
    return not empty_required(data, schema, schema) and not all_empty(data)


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
