"""The shared helpers of stagehand_py/_util, each written once and used by every caller: URL
normalising (agent and cache), atomic writes (agent, cache, batch), JSON Schema references
(structured output, extract, the agent) and deep merge (save_progress, extract's parts)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from stagehand_py import InvalidSchemaError
from stagehand_py._cache import ActionCache
from stagehand_py._operations._extract_schema import deref, merge, to_wire_schema
from stagehand_py._util import (
    deep_merge,
    inline_refs,
    normalise_url,
    pop_defs,
    ref_target,
    schema_dict,
    write_bytes_atomic,
    write_json_atomic,
)
from stagehand_py.batch import _evidence
from stagehand_py.llm._structured import OutputSpec, check_json_schema


def test_one_url_rule_for_the_agent_and_the_cache(tmp_path) -> None:
    same = ["HTTPS://Shop.test:443/list/?b=2&a=1&utm_source=mail#top", "https://shop.test/list?a=1&b=2"]
    assert normalise_url(same[0]) == normalise_url(same[1]) == "https://shop.test/list?a=1&b=2"
    cache = ActionCache(tmp_path)
    keys = [cache.key("act", "click buy", url, {}) for url in same]
    assert keys[0] == keys[1] and keys[0].url == normalise_url(same[0])
    assert normalise_url("http://x.test:99999/") == "http://x.test:99999/"  # a bad port: compared as written
    assert cache.key("act", "click buy", "https://shop.test/other", {}) != keys[0]  # control


def test_one_atomic_writer(tmp_path) -> None:
    assert _evidence.atomic_write_json is write_json_atomic and _evidence.atomic_write_bytes is write_bytes_atomic
    path = write_json_atomic(tmp_path / "deep" / "x.json", {"when": object.__name__, "é": 1})
    assert json.loads(path.read_text(encoding="utf-8")) == {"when": "object", "é": 1}
    assert path.read_text(encoding="utf-8").endswith("\n") and "é" in path.read_text(encoding="utf-8")


def test_deep_merge_union_policy_keeps_the_first_value() -> None:
    def first(a: Any, b: Any) -> Any:
        return b if a in (None, "") else a

    merged = deep_merge({"items": [1, 2], "t": "", "k": "x"}, {"items": [2, 3], "t": "y", "k": "z"}, lists="union", values=first)
    assert merged == {"items": [1, 2, 3], "t": "y", "k": "x"}
    # extract's merge of partial answers is this policy
    assert merge({"a": [1], "s": "one"}, {"a": [1, 2], "s": "two"}, join_strings=True) == {"a": [1, 2], "s": "one\ntwo"}
    assert merge({"a": None}, {"a": 5}) == {"a": 5} and merge({"a": 4}, {"a": 5}) == {"a": 4}


class Item(BaseModel):
    name: str


class Basket(BaseModel):
    items: list[Item]


def test_references_are_followed_only_inside_the_schema() -> None:
    schema = schema_dict(Basket)
    assert schema == Basket.model_json_schema() and schema_dict({"type": "string"}) == {"type": "string"}
    assert ref_target(schema, "#/$defs/Item")["properties"]["name"]["type"] == "string"
    assert ref_target(schema, "#") is schema
    for bad in ("#/$defs/Nope", "https://example.test/s.json", "#anchor"):
        with pytest.raises(KeyError):
            ref_target(schema, bad)
    escaped = {"$defs": {"a/b": {"type": "integer"}}, "$ref": "#/$defs/a~1b"}
    assert deref(escaped, escaped) == {"type": "integer"}
    assert deref({"$ref": "#/$defs/Missing"}, schema) == {}
    chain = {"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"type": "number"}}}
    assert deref({"$ref": "#/$defs/A"}, chain) == {"type": "number"}
    # the same rule judges callers' schemas
    with pytest.raises(InvalidSchemaError, match="names nothing"):
        check_json_schema({"$ref": "#/$defs/Missing"}, what="output")


def test_inline_refs_and_pop_defs() -> None:
    inlined = inline_refs(schema_dict(Basket))
    assert "$defs" not in inlined and inlined["properties"]["items"]["items"]["properties"]["name"]["type"] == "string"
    recursive = {"$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}}, "$ref": "#/$defs/N"}
    assert inline_refs(recursive)["properties"]["next"] == {"$ref": "#/$defs/N"}  # recursion stays a ref
    inner = {"type": "array", "items": {"$ref": "#/definitions/I"}, "definitions": {"I": {"type": "string"}}}
    assert pop_defs(inner) == {"definitions": {"I": {"type": "string"}}} and "definitions" not in inner
    # Both wrappers lift the definitions to their root, so nested references still resolve.
    listed = {"type": "array", "items": {"$ref": "#/$defs/I"}, "$defs": {"I": {"type": "string"}}}
    for wire in (to_wire_schema(schema_dict(Basket)), OutputSpec.from_output(listed).wire_schema):
        assert wire is not None and "$defs" in wire
        for ref in _refs(wire):
            ref_target(wire, ref)


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


async def test_the_variable_set_is_built_once_per_call(page, server, monkeypatch) -> None:
    from operations._ops import element, find_id

    from stagehand_py import Stagehand
    from stagehand_py._secrets import VariableSet
    from stagehand_py.testing import FunctionLLM

    calls: list[object] = []
    build = VariableSet.of.__func__  # type: ignore[attr-defined]

    def counted(cls: type[VariableSet], variables: Any, **kwargs: Any) -> VariableSet:
        if variables is not None and not isinstance(variables, VariableSet):
            calls.append(variables)
        return build(cls, variables, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(VariableSet, "of", classmethod(counted))

    shown: list[str] = []

    def model(request: Any) -> dict[str, Any]:
        shown.append("\n".join(getattr(p, "text", "") for m in request.messages for p in m.content))
        return {"elements": [element(find_id(request, "textbox: Username"), "fill", ["%user%"], "Username")]}

    await page.goto(server.url("forms.html"))
    sh = Stagehand(page, model=FunctionLLM(model))
    [action] = await sh.observe("the username field", variables={"user": {"value": "ada", "description": "the login"}})
    assert action.arguments == ["%user%"]
    assert len(calls) == 1  # built once where the call came in; everything below reads that set
    assert "%user%" in shown[0] and "the login" in shown[0]  # the one computation reached the prompt
