"""The real ``openai`` SDK's Azure client against a loopback server with Azure's path shape
(``/openai/deployments/<deployment>/chat/completions?api-version=...``): bytes sent, answers,
errors, retries, usage and cost, the key or an Entra ID token provider."""

from __future__ import annotations

import base64
import json
import time
from functools import partial
from typing import Any
from urllib.parse import parse_qs, urlsplit

import openai
import pytest

from stagehand_py import (
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    RateLimitError,
    RefusalError,
    ServerError,
)
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

from . import _sdk_cases as cases
from ._fake_provider import FakeProvider, chat_completion, error_body
from ._sdk_cases import FAST, ONE_RETRY, Book, dead_url

VERSION = "2024-10-21"


def client(fake: FakeProvider, mode: str | None = None, deployment: str = "gpt-4o", **kw: Any) -> LLMClient:
    kw.setdefault("retry_policy", FAST)
    if "azure_ad_token_provider" not in kw:
        kw.setdefault("api_key", "azure-test-key")
    return LLMClient(f"azure/{deployment}", base_url=fake.url, api_version=VERSION, output_mode=mode, **kw)


def _path_and_version(seen_path: str) -> tuple[str, list[str]]:
    parts = urlsplit(seen_path)
    return parts.path, parse_qs(parts.query).get("api-version", [])


async def test_json_schema_mode_on_a_deployment_path_with_usage_and_cost(fake: FakeProvider) -> None:
    fake.reply(chat_completion('{"title": "Dune", "year": 1965}', prompt_tokens=1000, completion_tokens=90,
                               cached=400, reasoning=3, model="gpt-4o-2024-11-20"))
    c = client(fake)
    result = await c.generate([SystemMessage("Extract books."), UserMessage("Dune (1965)")], purpose="extract",
                              output=Book, max_output_tokens=300)
    assert result.output == Book(title="Dune", year=1965)
    (seen,) = fake.seen
    assert _path_and_version(seen.path) == ("/openai/deployments/gpt-4o/chat/completions", [VERSION])
    assert seen.headers["api-key"] == "azure-test-key" and "authorization" not in seen.headers
    body = seen.body
    assert body["messages"] == [{"role": "system", "content": "Extract books."}, {"role": "user", "content": "Dune (1965)"}]
    assert body["response_format"] == {"type": "json_schema",
                                       "json_schema": {"name": "book", "schema": Book.model_json_schema(), "strict": False}}
    assert body["max_completion_tokens"] == 300 and "max_tokens" not in body
    u = result.usage
    assert (u.requests, u.input_tokens, u.output_tokens, u.cached_tokens, u.reasoning_tokens) == (1, 1000, 90, 400, 3)
    # The deployment is named after its model, so the catalogue prices it (the endpoint is not a local server).
    assert u.cost_usd == pytest.approx((600 * 2.5 + 400 * 1.25 + 90 * 10.0) / 1_000_000)
    assert u.cost_source is not None and "azure/gpt-4o" in u.cost_source


async def test_a_deployment_with_its_own_name_has_unknown_cost_until_given_a_price(fake: FakeProvider) -> None:
    from stagehand_py.llm import ModelPrice

    fake.reply(chat_completion('{"title": "A", "year": 1}'))
    c = client(fake, deployment="prod-extractor")
    assert c.price is None
    assert (await c.generate("x", output=Book)).usage.cost_usd is None
    assert _path_and_version(fake.seen[0].path)[0] == "/openai/deployments/prod-extractor/chat/completions"
    fake.reply(chat_completion('{"title": "A", "year": 1}', prompt_tokens=1_000_000, completion_tokens=0))
    priced = client(fake, deployment="prod-extractor", price=ModelPrice(input_per_million=2.5, output_per_million=10))
    usage = (await priced.generate("x", output=Book)).usage
    assert usage.cost_usd == pytest.approx(2.5) and usage.cost_source == "price= given to LLMClient"


async def test_an_entra_id_token_provider_is_asked_before_each_request(fake: FakeProvider) -> None:
    tokens = iter(["token-1", "token-2"])
    asked: list[str] = []

    def provider() -> str:
        asked.append(token := next(tokens))
        return token

    for _ in range(2):
        fake.reply(chat_completion('{"title": "A", "year": 1}'))
    c = client(fake, azure_ad_token_provider=provider)
    await c.generate("x", output=Book)
    await c.generate("y", output=Book)
    assert [s.headers["authorization"] for s in fake.seen] == ["Bearer token-1", "Bearer token-2"]
    assert all("api-key" not in s.headers for s in fake.seen) and asked == ["token-1", "token-2"]


async def test_tools_mode_forces_one_function_call(fake: FakeProvider) -> None:
    fake.reply(chat_completion(None, tool_call=("book", '{"title": "Emma", "year": 1815}')))
    result = await client(fake, "tools").generate("Emma", output=Book)
    assert result.output.title == "Emma"
    body = fake.seen[0].body
    assert body["tools"][0]["function"]["parameters"] == Book.model_json_schema()
    assert body["tool_choice"] == {"type": "function", "function": {"name": "book"}}


async def test_invalid_then_valid_output_reasks_over_the_wire(fake: FakeProvider) -> None:
    fake.reply(chat_completion('{"title": "Dune"}'))
    fake.reply(chat_completion('{"title": "Dune", "year": 1965}'))
    result = await client(fake).generate("Dune", output=Book)
    assert result.attempts == 2
    second = fake.seen[1].body["messages"]
    assert second[1] == {"role": "assistant", "content": '{"title": "Dune"}'} and "$.year" in second[2]["content"]


async def test_images_and_tool_turns_are_encoded(fake: FakeProvider) -> None:
    fake.reply(chat_completion("ok"))
    png = b"\x89PNG\r\n\x1a\nfake"
    await client(fake).generate([
        UserMessage([TextPart(text="look"), ImagePart(data=png, media_type="image/png")]),
        AssistantMessage([ToolCallPart(id="c1", name="click", arguments={"id": "0-4"})]),
        ToolMessage([ToolResultPart(tool_call_id="c1", content="done")]),
    ])
    msgs = fake.seen[0].body["messages"]
    assert msgs[0]["content"][1] == {"type": "image_url",
                                     "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode()}}
    assert msgs[1]["tool_calls"][0]["function"] == {"name": "click", "arguments": '{"id": "0-4"}'}
    assert msgs[2] == {"role": "tool", "tool_call_id": "c1", "content": "done"}


async def test_rate_limit_is_retried_honouring_retry_after(fake: FakeProvider) -> None:
    fake.reply(error_body("Requests to the ChatCompletions_Create Operation have exceeded the rate limit", "429"),
               status=429, headers={"retry-after": "1"})
    fake.reply(chat_completion('{"title": "A", "year": 1}'))
    c = client(fake)
    start = time.monotonic()
    await c.generate("x", output=Book)
    assert time.monotonic() - start >= 0.95 and len(fake.seen) == 2 and c.metrics.retries == 1
    for _ in range(3):
        fake.reply(error_body("rate limit", "429"), status=429)
    with pytest.raises(RateLimitError):
        await c.generate("x", output=Book)


async def test_server_errors_retry_up_to_the_cap_then_raise(fake: FakeProvider) -> None:
    for _ in range(3):
        fake.reply(error_body("internal", "server_error"), status=500)
    c = client(fake)
    with pytest.raises(ServerError, match="HTTP 500: internal") as info:
        await c.generate("x", output=Book)
    assert len(fake.seen) == 3 and (info.value.provider, info.value.model) == ("azure", "gpt-4o")
    assert isinstance(info.value.__cause__, openai.InternalServerError)


async def test_authentication_and_bad_requests_fail_at_once(fake: FakeProvider) -> None:
    fake.reply(error_body("Access denied due to invalid subscription key", "401"), status=401)
    with pytest.raises(AuthenticationError, match="AZURE_OPENAI_API_KEY"):
        await client(fake).generate("x", output=Book)
    fake.reply({"error": {"code": "DeploymentNotFound", "message": "The API deployment for this resource does not exist."}},
               status=404)
    with pytest.raises(BadRequestError, match="deployment for this resource does not exist"):
        await client(fake).generate("x", output=Book)
    assert len(fake.seen) == 2


async def test_timeouts_are_retried_then_raise_connection_error(fake: FakeProvider) -> None:
    assert (await cases.a_timeout_then_an_answer(fake, partial(client, fake), chat_completion)).title == "B"
    error = await cases.timeouts_past_the_retry(fake, partial(client, fake), chat_completion)
    assert isinstance(error.__cause__, openai.APITimeoutError)


async def test_connection_refused_is_a_connection_error() -> None:
    await cases.assert_refused_connection_is_retried_then_raised(
        LLMClient("azure/gpt-4o", api_key="k", base_url=dead_url(), api_version=VERSION, retry_policy=ONE_RETRY))


async def test_malformed_body_refusal_and_secrets(fake: FakeProvider) -> None:
    c = client(fake)
    await cases.assert_a_non_json_body_is_retried(fake, c, chat_completion)
    fake.reply(chat_completion(None, refusal="I can't help with that."))
    with pytest.raises(RefusalError, match="can't help"):
        await c.generate("x", output=Book)
    secret = "correct-horse-battery"
    fake.reply(error_body(f"Invalid value '{secret}'"), status=400)
    with pytest.raises(BadRequestError) as info:
        await c.generate(f"type {secret}", output=Book, secrets=[secret])
    assert secret not in str(info.value) and secret not in json.dumps(info.value.body)
    assert secret not in str(info.value.__cause__)


def test_configuration_names_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigurationError) as info:
        LLMClient("azure/gpt-4o")
    message = str(info.value)
    assert "AZURE_OPENAI_ENDPOINT" in message and "OPENAI_API_VERSION" in message and "AZURE_OPENAI_API_KEY" in message
    with pytest.raises(ConfigurationError, match="not both"):
        LLMClient("azure/gpt-4o", api_key="k", azure_ad_token_provider=lambda: "t", base_url="https://x", api_version=VERSION)
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://res.openai.azure.com")
    monkeypatch.setenv("OPENAI_API_VERSION", VERSION)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "from-env")
    model = LLMClient("azure/gpt-4o").model
    assert (model.api_version, model._api_key) == (VERSION, "from-env")  # type: ignore[attr-defined]
    assert "from-env" not in repr(model)
