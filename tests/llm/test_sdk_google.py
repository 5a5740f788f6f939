"""The real ``google-genai`` SDK against a loopback server speaking the Gemini API's
``generateContent``: bytes sent, answers, errors, retries, usage and cost, and the JSON Schema
subset Gemini accepts (the library adapts the schema and still validates the full one)."""

from __future__ import annotations

import base64
import json
import re
import time
from functools import partial
from pathlib import Path
from typing import Any

import httpx2
import pytest
from google.genai import errors as genai_errors
from pydantic import BaseModel

from stagehand_py import (
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    InvalidArgumentError,
    RateLimitError,
    RefusalError,
    ServerError,
)
from stagehand_py.llm import (
    AssistantMessage,
    ComputerTool,
    ImagePart,
    LLMClient,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolMessage,
    ToolResultPart,
    UserMessage,
)
from stagehand_py.llm._providers._google import gemini_schema

from . import _sdk_cases as cases
from ._fake_provider import FakeProvider, gemini_error, gemini_response
from ._sdk_cases import FAST, ONE_RETRY, Book, dead_url

PATH = "/v1beta/models/gemini-2.5-flash:generateContent"


def _camel(node: Any) -> Any:
    """Field names as lowerCamelCase: google-genai writes some with their proto names
    (``mime_type``), which the API's JSON parser accepts as well."""
    if isinstance(node, dict):
        return {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k): _camel(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_camel(v) for v in node]
    return node


def client(fake: FakeProvider, mode: str | None = None, **kw: Any) -> LLMClient:
    kw.setdefault("retry_policy", FAST)
    return LLMClient("google/gemini-2.5-flash", api_key="gemini-test-key", base_url=fake.url, output_mode=mode, **kw)


async def test_json_mode_sends_the_schema_and_reads_usage_and_cost(fake: FakeProvider) -> None:
    fake.reply(gemini_response('{"title": "Dune", "year": 1965}', prompt_tokens=1000, output_tokens=90, cached=400,
                               thoughts=30, thought_text="The user wants the book..."))
    c = client(fake)
    result = await c.generate([SystemMessage("Extract books."), UserMessage("Dune (1965)")], purpose="extract",
                              output=Book, max_output_tokens=300, temperature=0.2)
    assert result.output == Book(title="Dune", year=1965)  # the thought part is not the answer
    (seen,) = fake.seen
    assert seen.path == PATH
    assert seen.headers["x-goog-api-key"] == "gemini-test-key"
    body = seen.body
    assert body["systemInstruction"]["parts"] == [{"text": "Extract books."}]
    assert body["contents"] == [{"role": "user", "parts": [{"text": "Dune (1965)"}]}]
    assert body["generationConfig"] == {
        "responseMimeType": "application/json", "responseJsonSchema": Book.model_json_schema(),
        "maxOutputTokens": 300, "temperature": 0.2,
    }
    assert "tools" not in body
    u = result.usage
    # Thinking is billed as output and reported as reasoning; the cached part is a subset of input.
    assert (u.requests, u.input_tokens, u.output_tokens, u.cached_tokens, u.reasoning_tokens) == (1, 1000, 120, 400, 30)
    assert result.model == "gemini-2.5-flash"
    # Cost from genai-prices' bundled catalogue, and the client says so.
    assert c.price is not None and u.cost_usd == pytest.approx(c.price.cost(input_tokens=1000, output_tokens=120,
                                                                            cached_tokens=400))
    assert u.cost_usd is not None and u.cost_usd > 0
    assert u.cost_source is not None and u.cost_source.startswith("genai-prices ") and "google/gemini-2.5-flash" in u.cost_source
    assert c.metrics.by_purpose["extract"].cost_source == u.cost_source


async def test_tools_mode_forces_one_function_call(fake: FakeProvider) -> None:
    fake.reply(gemini_response(function_call=("book", {"title": "Emma", "year": 1815})))
    result = await client(fake, "tools").generate("Emma", output=Book)
    assert result.output == Book(title="Emma", year=1815)
    body = fake.seen[0].body
    (declaration,) = body["tools"][0]["functionDeclarations"]
    # google-genai 3.x writes this field with its proto name; the API's JSON parser accepts both spellings.
    parameters = declaration.get("parametersJsonSchema", declaration.get("parameters_json_schema"))
    assert declaration["name"] == "book" and parameters == Book.model_json_schema()
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["book"]}}
    assert "responseJsonSchema" not in body.get("generationConfig", {})


async def test_prompted_mode_puts_the_schema_in_the_system_instruction(fake: FakeProvider) -> None:
    fake.reply(gemini_response('```json\n{"title": "Emma", "year": 1815}\n```'))
    result = await client(fake, "prompted").generate([SystemMessage("Extract."), UserMessage("Emma")], output=Book)
    assert result.output.year == 1815
    body = fake.seen[0].body
    assert body["systemInstruction"]["parts"][0]["text"].startswith("Extract.\n\n")
    assert json.dumps(Book.model_json_schema(), indent=2, sort_keys=True) in body["systemInstruction"]["parts"][0]["text"]
    assert body["generationConfig"] == {"responseMimeType": "application/json"}


async def test_invalid_then_valid_output_reasks_over_the_wire(fake: FakeProvider) -> None:
    fake.reply(gemini_response('{"title": "Dune"}'))
    fake.reply(gemini_response('{"title": "Dune", "year": 1965}'))
    c = client(fake)
    result = await c.generate("Dune", output=Book)
    assert result.attempts == 2 and result.usage.requests == 2 and c.metrics.reasks == 1
    second = fake.seen[1].body["contents"]
    assert [turn["role"] for turn in second] == ["user", "model", "user"]
    assert second[1]["parts"] == [{"text": '{"title": "Dune"}'}]
    assert "$.year" in second[2]["parts"][0]["text"]


async def test_malformed_json_content_is_reasked(fake: FakeProvider) -> None:
    fake.reply(gemini_response('{"title": "Du'))
    fake.reply(gemini_response('{"title": "Dune", "year": 1965}'))
    result = await client(fake).generate("Dune", output=Book)
    assert result.attempts == 2
    assert "not valid JSON" in fake.seen[1].body["contents"][-1]["parts"][0]["text"]


async def test_conversation_with_images_and_tool_turns_is_encoded(fake: FakeProvider) -> None:
    fake.reply(gemini_response("done"))
    png, shot = b"\x89PNG\r\n\x1a\nfake", b"\x89PNGscreenshot"
    result = await client(fake).generate([
        SystemMessage("a"), SystemMessage("b"),
        UserMessage([TextPart(text="look"), ImagePart(data=png, media_type="image/png")]),
        AssistantMessage([TextPart(text="clicking"), ToolCallPart(id="c1", name="click", arguments={"id": "0-4"})]),
        ToolMessage([ToolResultPart(tool_call_id="c1", content=(TextPart(text="clicked"),
                                                                ImagePart(data=shot, media_type="image/png")))]),
        UserMessage("and now?"),
    ])
    assert result.output == "done"
    body = fake.seen[0].body
    assert body["systemInstruction"]["parts"] == [{"text": "a\n\nb"}]
    assert _camel(body["contents"]) == [
        {"role": "user", "parts": [
            {"text": "look"}, {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(png).decode()}}]},
        {"role": "model", "parts": [
            {"text": "clicking"}, {"functionCall": {"id": "c1", "name": "click", "args": {"id": "0-4"}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"id": "c1", "name": "click", "response": {"output": "clicked"}}},
            {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(shot).decode()}},
            {"text": "and now?"}]},
    ]


async def test_rate_limit_is_retried_honouring_retry_after(fake: FakeProvider) -> None:
    fake.reply(gemini_error(429, "Resource has been exhausted", "RESOURCE_EXHAUSTED"), status=429,
               headers={"retry-after": "1"})
    fake.reply(gemini_response('{"title": "A", "year": 1}'))
    c = client(fake)
    start = time.monotonic()
    result = await c.generate("x", output=Book)
    assert time.monotonic() - start >= 0.95  # the backoff alone would be ~1 ms
    assert result.output.year == 1 and len(fake.seen) == 2 and c.metrics.retries == 1


async def test_rate_limit_after_retries_is_rate_limit_error(fake: FakeProvider) -> None:
    for _ in range(3):
        fake.reply(gemini_error(429, "quota", "RESOURCE_EXHAUSTED"), status=429)
    with pytest.raises(RateLimitError) as info:
        await client(fake).generate("x", output=Book)
    assert info.value.status == 429 and len(fake.seen) == 3


async def test_server_errors_retry_up_to_the_cap_then_raise(fake: FakeProvider) -> None:
    for _ in range(3):
        fake.reply(gemini_error(503, "The model is overloaded", "UNAVAILABLE"), status=503)
    c = client(fake)
    with pytest.raises(ServerError, match="HTTP 503: The model is overloaded") as info:
        await c.generate("x", output=Book)
    err = info.value
    assert len(fake.seen) == 3  # 1 + max_retries=2: the SDK's own retries are off
    assert (err.status, err.provider, err.model) == (503, "google", "gemini-2.5-flash")
    assert err.body["error"]["status"] == "UNAVAILABLE"
    assert isinstance(err.__cause__, genai_errors.ServerError)
    assert c.metrics.failures == 1 and c.metrics.retries == 2 and c.metrics.total.requests == 0


async def test_a_bad_key_is_an_authentication_error_at_once(fake: FakeProvider) -> None:
    # Gemini answers a wrong key with 400 INVALID_ARGUMENT and the reason API_KEY_INVALID.
    fake.reply(gemini_error(400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT",
                            reason="API_KEY_INVALID"), status=400)
    fake.reply(gemini_response('{"title": "A", "year": 1}'))
    with pytest.raises(AuthenticationError, match="GEMINI_API_KEY") as info:
        await client(fake).generate("x", output=Book)
    assert len(fake.seen) == 1 and info.value.status == 400
    fake.reset()
    fake.reply(gemini_error(403, "Permission denied", "PERMISSION_DENIED"), status=403)
    with pytest.raises(AuthenticationError):
        await client(fake).generate("x", output=Book)
    assert len(fake.seen) == 1


async def test_bad_request_fails_at_once_with_the_provider_body(fake: FakeProvider) -> None:
    fake.reply(gemini_error(400, "Invalid JSON payload received. Unknown name \"foo\"", "INVALID_ARGUMENT"), status=400)
    with pytest.raises(BadRequestError, match="Invalid JSON payload") as info:
        await client(fake).generate("x", output=Book)
    assert len(fake.seen) == 1 and info.value.body["error"]["status"] == "INVALID_ARGUMENT"
    assert isinstance(info.value.__cause__, genai_errors.ClientError)


async def test_timeouts_are_retried_then_raise_connection_error(fake: FakeProvider) -> None:
    error = await cases.timeouts_past_the_retry(fake, partial(client, fake), gemini_response)
    assert len(fake.seen) == 2
    assert isinstance(error.__cause__, httpx2.TimeoutException)


async def test_timeout_then_success(fake: FakeProvider) -> None:
    assert (await cases.a_timeout_then_an_answer(fake, partial(client, fake), gemini_response)).title == "B"


async def test_connection_refused_is_a_connection_error() -> None:
    await cases.assert_refused_connection_is_retried_then_raised(
        LLMClient("google/gemini-2.5-flash", api_key="k", base_url=dead_url(), retry_policy=ONE_RETRY))


async def test_malformed_http_body_is_a_retried_server_error(fake: FakeProvider) -> None:
    c = client(fake)
    await cases.assert_a_non_json_body_is_retried(fake, c, gemini_response)
    for _ in range(3):
        fake.reply({"usageMetadata": {"promptTokenCount": 1}}, status=200)  # no candidates, no block reason
    with pytest.raises(ServerError, match="malformed response"):
        await c.generate("x", output=Book)


async def test_refusals_blocked_prompts_and_empty_answers(fake: FakeProvider) -> None:
    fake.reply(gemini_response(None, finish_reason="SAFETY"))
    with pytest.raises(RefusalError, match="finish reason SAFETY"):
        await client(fake).generate("x", output=Book)
    fake.reply({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": {"promptTokenCount": 4}})
    with pytest.raises(RefusalError, match="prompt was blocked .PROHIBITED_CONTENT"):
        await client(fake).generate("x", output=Book)
    fake.reply(gemini_response(None, finish_reason="MAX_TOKENS"))
    with pytest.raises(RefusalError, match="finish reason: MAX_TOKENS"):
        await client(fake).generate("x", output=Book)
    assert len(fake.seen) == 3  # a refusal is not retried


async def test_provider_errors_do_not_leak_secrets(fake: FakeProvider) -> None:
    secret = "correct-horse-battery"
    fake.reply(gemini_error(400, f"Invalid value '{secret}' at contents[0]", "INVALID_ARGUMENT"), status=400)
    with pytest.raises(BadRequestError) as info:
        await client(fake).generate(f"type {secret}", output=Book, secrets=[secret])
    err = info.value
    assert fake.seen[0].body["contents"][0]["parts"][0]["text"] == f"type {secret}"  # the model got it
    assert secret not in str(err) and secret not in json.dumps(err.body)
    assert secret not in str(err.__cause__) and secret not in json.dumps(getattr(err.__cause__, "details", None))
    assert "%secret%" in str(err)


async def test_computer_tool_is_refused_before_any_request(fake: FakeProvider) -> None:
    c = client(fake)
    with pytest.raises(InvalidArgumentError, match="cannot be offered the tool"):
        await c.turn([UserMessage("go")], tools=[ComputerTool(display_width=800, display_height=600)])
    assert fake.seen == []


async def test_record_once_then_replay_without_the_key(fake: FakeProvider, tmp_path: Path) -> None:
    from stagehand_py.testing import block_model_requests, use_cassette

    path = tmp_path / "gemini.json"
    fake.reply(gemini_response('{"title": "Dune", "year": 1965}'))
    recorder = LLMClient("google/gemini-2.5-flash", api_key="gemini-live-SECRET", base_url=fake.url, retry_policy=FAST)
    with use_cassette(path, mode="once"):
        recorded = await recorder.generate("Dune (1965)", output=Book)
    text = path.read_text()
    assert "gemini-live-SECRET" not in text and "x-goog-api-key" not in text.lower()  # Gemini's key header
    replayer = LLMClient("google/gemini-2.5-flash", base_url=dead_url(), retry_policy=FAST)
    with block_model_requests(), use_cassette(path, mode="once") as cassette:
        assert cassette.replaying
        assert (await replayer.generate("Dune (1965)", output=Book)).output == recorded.output
    assert len(fake.seen) == 1


def test_key_comes_from_gemini_or_google_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigurationError, match="GEMINI_API_KEY"):
        LLMClient("google/gemini-2.5-flash")
    monkeypatch.setenv("GOOGLE_API_KEY", "from-google-env")
    assert LLMClient("google/gemini-2.5-flash").model._api_key == "from-google-env"  # type: ignore[attr-defined]
    monkeypatch.setenv("GEMINI_API_KEY", "from-gemini-env")
    assert LLMClient("google/gemini-2.5-flash").model._api_key == "from-gemini-env"  # type: ignore[attr-defined]
    with pytest.raises(ConfigurationError, match="azure/<deployment>"):
        LLMClient("google/gemini-2.5-flash", api_version="2024-10-21")



def test_without_the_sdk_installed_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "stagehand_py.llm._providers._google", None)  # as if google-genai were absent
    with pytest.raises(ConfigurationError, match=r"pip install 'stagehand_py\[google\]'"):
        LLMClient("google/gemini-2.5-flash", api_key="k")


# --- the schema subset --------------------------------------------------------------------------


def _keywords(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("properties", "$defs") and isinstance(value, dict):
                found.add(key)
                for sub in value.values():
                    found |= _keywords(sub)
            else:
                found.add(key)
                found |= _keywords(value)
    elif isinstance(node, list):
        for item in node:
            found |= _keywords(item)
    return found


def test_the_agents_step_schema_is_adapted_to_what_gemini_accepts() -> None:
    from stagehand_py.agent._tools import builtin_tools, step_model

    schema = step_model(builtin_tools(None)).model_json_schema()
    # Control: the schema as pydantic writes it uses keywords outside Gemini's subset.
    assert {"const", "default", "$ref", "$defs", "exclusiveMinimum"} <= _keywords(schema)
    adapted = gemini_schema(schema)
    assert _keywords(adapted) <= {"type", "format", "title", "description", "enum", "items", "minItems", "maxItems",
                                  "minimum", "maximum", "anyOf", "properties", "additionalProperties", "required"}
    # The union's tag survives as a one-value enum, so Gemini still picks one tool per answer.
    tags = [option["properties"]["tool"]["enum"] for option in adapted["properties"]["action"]["anyOf"]]
    assert ["act"] in tags and ["done"] in tags


async def test_a_rule_gemini_cannot_carry_is_still_enforced_by_a_reask(fake: FakeProvider) -> None:
    schema = {"type": "object", "title": "code",
              "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}-\\d{2}$"},
                             "kind": {"oneOf": [{"const": "a"}, {"const": "b"}]},
                             "n": {"type": "integer", "exclusiveMinimum": 0, "not": {"const": 13}}},
              "required": ["code", "kind", "n"], "additionalProperties": False}
    fake.reply(gemini_response('{"code": "abc", "kind": "a", "n": 13}'))
    fake.reply(gemini_response('{"code": "ABC-12", "kind": "b", "n": 3}'))
    result = await client(fake).generate("code?", output=schema)
    assert result.output == {"code": "ABC-12", "kind": "b", "n": 3} and result.attempts == 2
    wire = fake.seen[0].body["generationConfig"]["responseJsonSchema"]
    assert wire["properties"] == {"code": {"type": "string"}, "kind": {"anyOf": [{"enum": ["a"], "type": "string"}, {"enum": ["b"], "type": "string"}]},
                                  "n": {"type": "integer", "minimum": 0}}
    assert wire["additionalProperties"] is False
    reask = fake.seen[1].body["contents"][-1]["parts"][0]["text"]
    assert "$.code" in reask and "$.n" in reask  # the dropped pattern and `not` came back as problems


def test_a_recursive_schema_keeps_its_reference_for_gemini_to_resolve() -> None:
    class Node(BaseModel):
        name: str
        children: list[Node] = []

    adapted = gemini_schema(Node.model_json_schema())
    assert adapted["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert set(adapted["$defs"]["Node"]["properties"]) == {"name", "children"}
    assert "default" not in json.dumps(adapted)

