"""The real ``openai`` SDK against a loopback server: bytes sent, answers, errors, retries."""

from __future__ import annotations

import base64
import json
import time
from functools import partial

import openai
import pytest

from stagehand_py import (
    AuthenticationError,
    BadRequestError,
    RateLimitError,
    RefusalError,
    ServerError,
)
from stagehand_py.llm import ImagePart, LLMClient, SystemMessage, TextPart, UserMessage

from . import _sdk_cases as cases
from ._fake_provider import FakeProvider, chat_completion, error_body
from ._sdk_cases import FAST, ONE_RETRY, Book, dead_url


def client(fake: FakeProvider, mode: str, **kw: object) -> LLMClient:
    kw.setdefault("retry_policy", FAST)
    return LLMClient("openai/gpt-4.1-mini", api_key="sk-test-key", base_url=f"{fake.url}/v1",
                     output_mode=mode, **kw)  # type: ignore[arg-type]


async def test_json_schema_mode_sends_the_schema_and_parses_the_answer(fake: FakeProvider) -> None:
    fake.reply(chat_completion('{"title": "Dune", "year": 1965}', prompt_tokens=100, completion_tokens=9,
                               cached=40, reasoning=3))
    c = client(fake, "json_schema")
    result = await c.generate([SystemMessage("Extract books."), UserMessage("Dune (1965)")], purpose="extract", output=Book)
    assert result.output == Book(title="Dune", year=1965)
    (seen,) = fake.seen
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == "Bearer sk-test-key"
    assert seen.body["model"] == "gpt-4.1-mini"
    assert seen.body["messages"] == [
        {"role": "system", "content": "Extract books."},
        {"role": "user", "content": "Dune (1965)"},
    ]
    assert seen.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "book", "schema": Book.model_json_schema(), "strict": False},
    }
    assert "tools" not in seen.body
    u = result.usage
    assert (u.requests, u.input_tokens, u.output_tokens, u.cached_tokens, u.reasoning_tokens) == (1, 100, 9, 40, 3)
    assert c.metrics.by_purpose["extract"].input_tokens == 100


async def test_tools_mode_forces_one_function_call(fake: FakeProvider) -> None:
    fake.reply(chat_completion(None, tool_call=("book", '{"title": "Emma", "year": 1815}')))
    result = await client(fake, "tools").generate("Emma", output=Book)
    assert result.output.title == "Emma"
    body = fake.seen[0].body
    assert body["tools"] == [{
        "type": "function",
        "function": {"name": "book", "description": body["tools"][0]["function"]["description"],
                     "parameters": Book.model_json_schema()},
    }]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "book"}}
    assert "response_format" not in body


async def test_invalid_then_valid_output_reasks_over_the_wire(fake: FakeProvider) -> None:
    fake.reply(chat_completion('{"title": "Dune"}'))
    fake.reply(chat_completion('{"title": "Dune", "year": 1965}'))
    c = client(fake, "json_schema")
    result = await c.generate("Dune", output=Book)
    assert result.attempts == 2 and result.usage.requests == 2
    second = fake.seen[1].body["messages"]
    assert second[1] == {"role": "assistant", "content": '{"title": "Dune"}'}
    assert second[2]["role"] == "user" and "$.year" in second[2]["content"] and "Field required" in second[2]["content"]


async def test_malformed_json_content_is_reasked(fake: FakeProvider) -> None:
    fake.reply(chat_completion('{"title": "Du'))
    fake.reply(chat_completion('{"title": "Dune", "year": 1965}'))
    result = await client(fake, "json_schema").generate("Dune", output=Book)
    assert result.attempts == 2
    assert "not valid JSON" in fake.seen[1].body["messages"][-1]["content"]


async def test_images_travel_as_data_urls(fake: FakeProvider) -> None:
    fake.reply(chat_completion('{"title": "A", "year": 1}'))
    png = b"\x89PNG\r\n\x1a\nfake"
    await client(fake, "json_schema").generate(
        [UserMessage([TextPart(text="What book?"), ImagePart(data=png, media_type="image/png")])], output=Book)
    content = fake.seen[0].body["messages"][0]["content"]
    assert content[0] == {"type": "text", "text": "What book?"}
    assert content[1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode()}}


async def test_rate_limit_is_retried_honouring_retry_after(fake: FakeProvider) -> None:
    fake.reply(error_body("slow down", "rate_limit_error"), status=429, headers={"retry-after-ms": "300"})
    fake.reply(chat_completion('{"title": "A", "year": 1}'))
    c = client(fake, "json_schema")
    start = time.monotonic()
    result = await c.generate("x", output=Book)
    assert time.monotonic() - start >= 0.3  # backoff alone would be ~1 ms
    assert result.output.year == 1 and len(fake.seen) == 2 and c.metrics.retries == 1


async def test_server_errors_retry_up_to_the_cap_then_raise(fake: FakeProvider) -> None:
    for _ in range(3):
        fake.reply(error_body("internal", "server_error"), status=500)
    c = client(fake, "json_schema")
    with pytest.raises(ServerError) as info:
        await c.generate("x", output=Book)
    err = info.value
    assert len(fake.seen) == 3  # 1 + max_retries=2: the SDK's own retries are off
    assert (err.status, err.provider, err.model) == (500, "openai", "gpt-4.1-mini")
    assert err.body == {"message": "internal", "type": "server_error"}
    assert isinstance(err.__cause__, openai.InternalServerError)
    assert "HTTP 500: internal" in str(err)
    assert c.metrics.failures == 1 and c.metrics.retries == 2 and c.metrics.total.requests == 0


async def test_authentication_error_fails_at_once(fake: FakeProvider) -> None:
    fake.reply(error_body("Incorrect API key provided", "invalid_api_key"), status=401)
    fake.reply(chat_completion('{"title": "A", "year": 1}'))
    with pytest.raises(AuthenticationError, match="OPENAI_API_KEY") as info:
        await client(fake, "json_schema").generate("x", output=Book)
    assert len(fake.seen) == 1 and info.value.status == 401
    assert isinstance(info.value.__cause__, openai.AuthenticationError)


async def test_bad_request_fails_at_once_with_the_provider_body(fake: FakeProvider) -> None:
    fake.reply(error_body("Invalid schema for response_format 'book'"), status=400)
    with pytest.raises(BadRequestError, match="Invalid schema for response_format") as info:
        await client(fake, "json_schema").generate("x", output=Book)
    assert len(fake.seen) == 1 and info.value.body["type"] == "invalid_request_error"


async def test_timeouts_are_retried_then_raise_connection_error(fake: FakeProvider) -> None:
    error = await cases.timeouts_past_the_retry(fake, partial(client, fake, "json_schema"), chat_completion)
    assert len(fake.seen) == 2
    assert isinstance(error.__cause__, openai.APITimeoutError)


async def test_timeout_then_success(fake: FakeProvider) -> None:
    answer = await cases.a_timeout_then_an_answer(fake, partial(client, fake, "json_schema"), chat_completion)
    assert answer.title == "B"


async def test_connection_refused_is_a_connection_error() -> None:
    await cases.assert_refused_connection_is_retried_then_raised(LLMClient(
        "openai/gpt-4.1-mini", api_key="k", base_url=f"{dead_url()}/v1", output_mode="json_schema", retry_policy=ONE_RETRY))


async def test_malformed_http_body_is_a_retried_server_error(fake: FakeProvider) -> None:
    c = client(fake, "json_schema")
    await cases.assert_a_non_json_body_is_retried(fake, c, chat_completion)
    for _ in range(3):
        fake.reply(raw=b'{"id": "x"', status=200)
    with pytest.raises(ServerError, match="malformed response"):
        await c.generate("x", output=Book)


async def test_refusal_and_empty_content(fake: FakeProvider) -> None:
    fake.reply(chat_completion(None, refusal="I can't help with that."))
    with pytest.raises(RefusalError, match="can't help"):
        await client(fake, "json_schema").generate("x", output=Book)
    fake.reply(chat_completion("", finish_reason="length"))
    with pytest.raises(RefusalError, match="finish reason: length"):
        await client(fake, "json_schema").generate("x", output=Book)


async def test_rate_limit_after_retries_is_rate_limit_error(fake: FakeProvider) -> None:
    for _ in range(3):
        fake.reply(error_body("slow down", "rate_limit_error"), status=429, headers={"retry-after-ms": "1"})
    with pytest.raises(RateLimitError) as info:
        await client(fake, "json_schema").generate("x", output=Book)
    assert info.value.status == 429 and len(fake.seen) == 3


async def test_provider_errors_do_not_leak_secrets(fake: FakeProvider) -> None:
    secret = "correct-horse-battery"
    fake.reply(error_body(f"Invalid value '{secret}' in messages[0]"), status=400)
    with pytest.raises(BadRequestError) as info:
        await client(fake, "json_schema").generate(f"type {secret}", output=Book, secrets=[secret])
    err = info.value
    assert fake.seen[0].body["messages"][0]["content"] == f"type {secret}"  # the model got it
    assert secret not in str(err) and secret not in json.dumps(err.body)
    assert secret not in str(err.__cause__)
    assert "%secret%" in str(err)


async def test_openai_compatible_server_in_prompted_json_mode(fake: FakeProvider) -> None:
    fake.reply(chat_completion('Here you go:\n```json\n{"title": "Dune", "year": 1965}\n```', model="llama3.2"))
    c = LLMClient("openai/llama3.2", base_url=f"{fake.url}/v1", retry_policy=FAST)  # no key needed
    result = await c.generate([SystemMessage("Extract books."), UserMessage("Dune (1965)")], output=Book,
                              max_output_tokens=256)
    assert result.output == Book(title="Dune", year=1965)
    assert result.model == "llama3.2"
    body = fake.seen[0].body
    assert "response_format" not in body and "tools" not in body
    assert body["max_tokens"] == 256  # the widely supported name on compatible servers
    system = body["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("Extract books.\n\n")
    assert json.dumps(Book.model_json_schema(), indent=2, sort_keys=True) in system["content"]


async def test_prompted_mode_without_a_system_message_adds_one(fake: FakeProvider) -> None:
    fake.reply(chat_completion('{"title": "A", "year": 1}'))
    fake.reply(chat_completion('[1, 2]'))
    c = LLMClient("openai/qwen", base_url=f"{fake.url}/v1", retry_policy=FAST)
    await c.generate("Dune", output=Book)
    msgs = fake.seen[0].body["messages"]
    assert [m["role"] for m in msgs] == ["system", "user"] and "JSON Schema" in msgs[0]["content"]
    # a top-level array schema is wrapped on the wire; a bare array answer is accepted
    result = await c.generate("n?", output={"type": "array", "items": {"type": "integer"}})
    assert result.output == [1, 2]


async def test_tool_turns_encode_and_images_refused_when_the_profile_says_so(fake: FakeProvider) -> None:
    from stagehand_py import InvalidArgumentError
    from stagehand_py.llm import AssistantMessage, Profile, ToolCallPart, ToolMessage, ToolResultPart

    fake.reply(chat_completion("ok"))
    async with client(fake, "json_schema") as c:
        await c.generate([
            UserMessage("go"),
            AssistantMessage([TextPart(text="clicking"), ToolCallPart(id="c1", name="click", arguments={"id": "0-4"})]),
            ToolMessage([ToolResultPart(tool_call_id="c1", content="done")]),
        ])
    msgs = fake.seen[0].body["messages"]
    assert msgs[1] == {"role": "assistant", "content": "clicking", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "click", "arguments": '{"id": "0-4"}'}}]}
    assert msgs[2] == {"role": "tool", "tool_call_id": "c1", "content": "done"}

    blind = LLMClient("openai/text-only", base_url=f"{fake.url}/v1", profile=Profile(output_mode="prompted", supports_images=False))
    with pytest.raises(InvalidArgumentError, match="supports_images"):
        await blind.generate([UserMessage([ImagePart(data=b"x")])])
    assert len(fake.seen) == 1
