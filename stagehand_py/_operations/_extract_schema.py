"""The caller's schema for extract(), walked: what the model answers, and what its answers say.

Pure functions over a JSON Schema (local ``$ref`` followed with :func:`deref` as they walk)
and the data that should fit it:

- :func:`to_wire_schema`: the wrapper object the model answers (URL fields as element ids, plus
  ``instruction_satisfied``); :func:`map_urls` turns the ids back into the page's URLs
  (:class:`Links`: an id, or a link URL the model copied, as the browser resolves it; a link's
  name is its link when the links so named all go to one URL, else re-asked with their ids);
- :func:`absent_as_none`, :func:`empty_required`, :func:`all_empty`: what "not on the page" is
  and whether the page showed enough; :func:`answer_data` (URLs mapped, absent values said)
  and :func:`shows_data` (nothing required empty, not all blank) are what extract asks of them;
- :func:`complete`: a list-free schema's every field filled (a lookup answered);
- :func:`off_page`: the string fields of an answer whose value is nowhere in the page's text;
- :func:`merge`: two parts' answers as one (:func:`merge_sourced`: with where each value came
  from, alike); :func:`schema_words`: the fields as ranking hints.
"""

from __future__ import annotations

import copy
from collections.abc import Container
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

from .._prompts.extract import DATA_DESCRIPTION, SATISFIED_DESCRIPTION, URL_FIELD_DESCRIPTION
from .._types import Repair
from .._util import deep_merge, pop_defs, ref_target
from ..snapshot import Snapshot
from ._answers import element_id, lines_named
from ._extract_repairs import asks_for_words, repair

__all__ = ["URL_FORMATS", "Links", "OffPage", "absent_as_none", "all_empty", "answer_data", "complete", "deref",
           "empty_required", "map_urls", "merge", "merge_sourced", "off_page", "schema_words", "shows_data",
           "to_wire_schema"]

#: The string formats of a URL field.
URL_FORMATS = frozenset({"uri", "iri", "uri-reference", "iri-reference", "url"})


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
    return isinstance(node, dict) and node.get("type") == "string" and node.get("format") in URL_FORMATS


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


class Links:
    """The page's links, for a URL field's answer (see :meth:`url` and :meth:`named`)."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot
        self._urls = set(snapshot.url_map.values())
        self._loose = {_url_key(url): url for url in sorted(self._urls, reverse=True)}

    def url(self, value: str) -> str | None:
        """The link's URL as the browser resolves it (the url map's) for an answer that names a link.

        The answer should be a link's element id; a model that copies the link's URL instead
        (whole, relative as written in the href, or without its trailing slash) names a link
        too, and gets the page's own URL for it. Anything else is None (see :meth:`named`).
        """
        snapshot = self._snapshot
        eid = element_id(value, snapshot)
        if eid is not None and eid in snapshot.url_map:
            return snapshot.url_map[eid]
        if value in self._urls:
            return value
        if not isinstance(value, str) or not value.strip() or eid is not None:
            return None
        return self._loose.get(_url_key(urljoin(snapshot.url, value.strip())))

    def named(self, value: str) -> dict[str, str]:
        """The links whose outline text is ``value`` (their name, case and spacing aside): id -> URL."""
        return {eid: self._snapshot.url_map[eid] for eid in lines_named(value, self._snapshot)
                if eid in self._snapshot.url_map}


def answer_data(data: Any, schema: dict[str, Any], links: Links) -> tuple[list[str], Any, list[Repair]]:
    """The model's ``data`` as the caller gets it: URL fields' ids mapped to the page's URLs
    (:func:`map_urls`), "not on the page" said as the schema allows (:func:`absent_as_none`).
    With problems (an id that names no link), the data is not usable: the model is asked again.
    The repairs say what was corrected or re-asked."""
    problems: list[str] = []
    repairs: list[Repair] = []
    mapped = map_urls(data, schema, schema, links, problems, repairs)
    return problems, (None if problems else absent_as_none(mapped, schema, schema)), repairs


def _link_by_name(data: str, links: Links, problems: list[str], repairs: list[Repair], path: str) -> str | None:
    """A URL field answered with a link's name: its URL when every link so named goes to one URL
    (the page decides), else a re-ask listing their ids; None when no link has that name."""
    named = links.named(data)
    if not named:
        return None
    ids = ", ".join(f"[{eid}]" for eid in list(named)[:6])
    if len(set(named.values())) == 1:
        eid = next(iter(named))
        alike = "the only link so named" if len(named) == 1 else f"the {len(named)} links so named all go there"
        repairs.append(repair("link_name_to_id", path, f"{data!r}, a link's name instead of its id",
                              f"took the URL of the link [{eid}] ({alike})", "corrected"))
        return next(iter(named.values()))
    problems.append(f"{path}: {data!r} is the name of {len(named)} links ({ids}) that go to different URLs, not an "
                    "id; answer with the id of the link you mean, as written in brackets at the start of its line")
    repairs.append(repair("link_name_to_id", path, f"{data!r}, a link's name instead of its id",
                          f"re-asked with the ids of the {len(named)} links so named: {ids}", "re-asked"))
    return data


def map_urls(data: Any, schema: Any, root: dict[str, Any], links: Links, problems: list[str],
             repairs: list[Repair], path: str = "data") -> Any:
    """``data`` with every URL field's element id replaced by its link's URL; problems and repairs collected."""
    node = deref(schema, root)
    if not isinstance(node, dict):
        return data
    if isinstance(data, str) and (_is_url(node) or any(_is_url(deref(b, root)) for b in node.get("anyOf", []) + node.get("oneOf", []))):
        if not data.strip():
            return data  # "no such link": absent, not a link to check (see absent_as_none)
        url = links.url(data)
        if url is None:
            url = _link_by_name(data, links, problems, repairs, path)
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
            out[key] = map_urls(value, sub, root, links, problems, repairs, f"{path}.{key}") if sub is not None else value
        for branch in node.get("allOf", []):
            out = map_urls(out, branch, root, links, problems, repairs, path)
        if not props:
            for branch in node.get("anyOf", []) + node.get("oneOf", []):
                if isinstance(deref(branch, root), dict) and deref(branch, root).get("properties"):
                    return map_urls(out, branch, root, links, problems, repairs, path)
        return out
    if isinstance(data, list):
        items = node.get("items")
        if items is None:
            for branch in node.get("anyOf", []) + node.get("oneOf", []):
                if isinstance(deref(branch, root), dict) and "items" in deref(branch, root):
                    items = deref(branch, root)["items"]
                    break
        if isinstance(items, dict):
            return [map_urls(v, items, root, links, problems, repairs, f"{path}[{i}]") for i, v in enumerate(data)]
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


def merge_sourced(a: Any, sa: Any, b: Any, sb: Any) -> tuple[Any, Any]:
    """:func:`merge` of ``a`` and ``b`` (objects key by key, lists without repeats, the first
    value found), with their sources (trees of the same shapes as the data) merged alike."""
    if isinstance(a, dict) and isinstance(b, dict):
        out, src = dict(a), dict(sa or {})
        for key, value in b.items():
            if key in a:
                out[key], src[key] = merge_sourced(a[key], (sa or {}).get(key), value, (sb or {}).get(key))
            else:
                out[key], src[key] = value, (sb or {}).get(key)
        return out, src
    if isinstance(a, list) and isinstance(b, list):
        sources_a, sources_b = list(sa or [None] * len(a)), list(sb or [None] * len(b))
        added = [i for i, item in enumerate(b) if item not in a]
        return [*a, *(b[i] for i in added)], [*sources_a, *(sources_b[i] for i in added)]
    return (b, sb) if _empty(a) else (a, sa)


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


@dataclass(frozen=True)
class OffPage:
    """A string field whose value the page's text does not hold: where, and whether it is required."""

    #: The object that holds the field (the answer's own dict: the caller may drop the key).
    holder: dict[str, Any]
    key: str
    path: str
    required: bool


def _plain_string(node: Any, root: dict[str, Any]) -> dict[str, Any] | None:
    """``node`` when it is a string any words may fill (no enum, const, format or pattern), the
    string branch of a nullable one, else None."""
    node = deref(node, root)
    if not isinstance(node, dict):
        return None
    branches = [deref(b, root) for b in node.get("anyOf", []) + node.get("oneOf", [])]
    strings = [b for b in branches if isinstance(b, dict) and b.get("type") == "string"]
    one = strings[0] if len(strings) == 1 and not node.get("type") else node
    kind = one.get("type")
    if not (kind == "string" or (isinstance(kind, list) and "string" in kind)):
        return None
    if any(key in one or key in node for key in ("enum", "const", "format", "pattern")):
        return None
    return one


def off_page(data: Any, schema: Any, root: dict[str, Any], on_page: Container[str], path: str = "data",
             depth: int = 0) -> list[OffPage]:
    """The string fields of ``data`` (objects at any depth, list items' objects too) whose value
    is not ``in on_page``; fields that ask for words of the model's own are not checked
    (:func:`~._extract_repairs.asks_for_words`), nor blank ones (absent, not invented)."""
    if depth > 32:
        return []
    node = _object_node(schema, root)
    found: list[OffPage] = []
    if isinstance(data, dict):
        props = node.get("properties", {})
        required = set(node.get("required", []))
        for key, value in data.items():
            sub = props.get(key)
            if sub is None:
                continue
            string = _plain_string(sub, root)
            if isinstance(value, str) and string is not None:
                if value.strip() and not asks_for_words(key, string) and value not in on_page:
                    found.append(OffPage(data, key, f"{path}.{key}", key in required))
            else:
                found += off_page(value, sub, root, on_page, f"{path}.{key}", depth + 1)
    elif isinstance(data, list):
        items = deref(node.get("items"), root)
        if isinstance(items, dict):
            for i, value in enumerate(data):
                found += off_page(value, items, root, on_page, f"{path}[{i}]", depth + 1)
    return found


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
