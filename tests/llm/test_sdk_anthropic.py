"""The real ``anthropic`` SDK against a loopback server speaking the Messages API."""

from __future__ import annotations

import base64
import time

import anthropic
import pytest

from stagehand_py import AuthenticationError, RefusalError, ServerError
from stagehand_py.llm import (
    AssistantMessage,
    ImagePart,
    LLMClient,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolMessage,
    ToolResultPart,
    UserMessage,
)

from ._fake_provider import FakeProvider, anthropic_message, error_body
from ._sdk_cases import FAST, Book


def client(fake: FakeProvider, **kw: object) -> LLMClient:
    kw.setdefault("retry_policy", FAST)
    return LLMClient("anthropic/claude-test-model", api_key="sk-ant-test", base_url=fake.url, **kw)  # type: ignore[arg-type]


async def test_tool_use_is_the_default_structured_output(fake: FakeProvider) -> None:
    fake.reply(anthropic_message(tool_use=("book", {"title": "Dune", "year": 1965}), input_tokens=30,
                                 output_tokens=12, cache_read=100, cache_write=5))
    c = client(fake)
    result = await c.generate([SystemMessage("Extract books."), UserMessage("Dune (1965)")], purpose="extract", output=Book)
    assert result.output == Book(title="Dune", year=1965)
    (seen,) = fake.seen
    assert seen.path == "/v1/messages"
    # anthropic 2.x sends the key as a bearer token; older SDKs used x-api-key
    assert "Bearer sk-ant-test" == seen.headers.get("authorization") or seen.headers.get("x-api-key") == "sk-ant-test"
    body = seen.body
    assert body["model"] == "claude-test-model"
    assert body["system"] == "Extract books."
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Dune (1965)"}]}]
    assert body["max_tokens"] == 4096
    assert body["tools"] == [{"name": "book", "description": body["tools"][0]["description"],
                              "input_schema": Book.model_json_schema()}]
    assert body["tool_choice"] == {"type": "tool", "name": "book"}
    u = result.usage
    assert (u.input_tokens, u.output_tokens, u.cached_tokens) == (135, 12, 100)


async def test_native_json_schema_mode_uses_output_config(fake: FakeProvider) -> None:
    fake.reply(anthropic_message(text='{"title": "Emma", "year": 1815}'))
    result = await client(fake, output_mode="json_schema").generate("Emma", output=Book)
    assert result.output.title == "Emma"
    body = fake.seen[0].body
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": Book.model_json_schema()}}
    assert "tools" not in body


async def test_invalid_tool_input_is_reasked(fake: FakeProvider) -> None:
    fake.reply(anthropic_message(tool_use=("book", {"title": "Dune", "year": "sixty-five"})))
    fake.reply(anthropic_message(tool_use=("book", {"title": "Dune", "year": 1965})))
    result = await client(fake).generate("Dune", output=Book)
    assert result.attempts == 2
    msgs = fake.seen[1].body["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assert msgs[1]["content"] == [{"type": "text", "text": '{"title": "Dune", "year": "sixty-five"}'}]
    assert "$.year" in msgs[2]["content"][0]["text"]


async def test_conversation_with_images_and_tool_turns_is_encoded(fake: FakeProvider) -> None:
    fake.reply(anthropic_message(text="done"))
    png = b"\x89PNGdata"
    await client(fake).generate([
        SystemMessage("a"), SystemMessage("b"),
        UserMessage([TextPart(text="look"), ImagePart(data=png, media_type="image/png")]),
        AssistantMessage([ToolCallPart(id="t1", name="click", arguments={"id": "0-1"})]),
        ToolMessage([ToolResultPart(tool_call_id="t1", content="clicked")]),
        UserMessage("and now?"),
    ])
    body = fake.seen[0].body
    assert body["system"] == "a\n\nb"
    assert body["messages"] == [
        {"role": "user", "content": [
            {"type": "text", "text": "look"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(png).decode()}},
        ]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "click", "input": {"id": "0-1"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "clicked", "is_error": False},
            {"type": "text", "text": "and now?"},
        ]},
    ]
    assert "tools" not in body


async def test_rate_limit_retry_after_seconds_is_honoured(fake: FakeProvider) -> None:
    fake.reply(error_body("rate limited", "rate_limit_error") | {"type": "error"}, status=429, headers={"retry-after": "1"})
    fake.reply(anthropic_message(tool_use=("book", {"title": "A", "year": 1})))
    c = client(fake)
    start = time.monotonic()
    await c.generate("x", output=Book)
    assert time.monotonic() - start >= 0.95
    assert len(fake.seen) == 2 and c.metrics.retries == 1


async def test_overloaded_529_retries_then_server_error(fake: FakeProvider) -> None:
    for _ in range(3):
        fake.reply({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, status=529)
    with pytest.raises(ServerError, match="HTTP 529: Overloaded") as info:
        await client(fake).generate("x", output=Book)
    assert len(fake.seen) == 3
    assert info.value.provider == "anthropic" and isinstance(info.value.__cause__, anthropic.APIStatusError)


async def test_permission_denied_fails_at_once(fake: FakeProvider) -> None:
    fake.reply({"type": "error", "error": {"type": "permission_error", "message": "no access"}}, status=403)
    with pytest.raises(AuthenticationError, match="ANTHROPIC_API_KEY"):
        await client(fake).generate("x", output=Book)
    assert len(fake.seen) == 1


async def test_refusal_stop_reason(fake: FakeProvider) -> None:
    fake.reply(anthropic_message(text="I won't do that.", stop_reason="refusal"))
    with pytest.raises(RefusalError, match="won't do that"):
        await client(fake).generate("x", output=Book)
    fake.reply(anthropic_message())  # no content blocks at all
    with pytest.raises(RefusalError, match="no content"):
        await client(fake).generate("x", output=Book)
