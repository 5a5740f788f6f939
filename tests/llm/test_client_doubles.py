"""LLMClient behaviour through the shipped doubles: validation, re-asks, retries, usage."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from stagehand_py import (
    AuthenticationError,
    ConfigurationError,
    InvalidSchemaError,
    LLMError,
    OutputValidationError,
    RateLimitError,
    RefusalError,
    ServerError,
    TestDoubleError,
    UsageLimitExceededError,
)
from stagehand_py.llm import (
    LLMClient,
    LLMRequest,
    ModelResponse,
    RetryPolicy,
    SystemMessage,
    Usage,
    UsageLimits,
    UserMessage,
)
from stagehand_py.testing import FunctionLLM, ScriptedLLM

FAST = RetryPolicy(max_retries=2, initial_backoff=0.001, max_backoff=0.002, jitter=0)


class Book(BaseModel):
    title: str
    year: int


def rate_limited() -> RateLimitError:
    return RateLimitError("rate limited", provider="fake", model="m", status=429)


async def test_function_llm_sync_gets_messages_purpose_and_schema() -> None:
    seen: list[LLMRequest] = []

    def answer(request: LLMRequest) -> dict[str, Any]:
        seen.append(request)
        return {"title": "Dune", "year": 1965}

    client = LLMClient(FunctionLLM(answer))
    result = await client.generate([SystemMessage("sys"), UserMessage("Dune, 1965")], purpose="extract", output=Book)
    assert result.output == Book(title="Dune", year=1965)
    assert result.attempts == 1
    (request,) = seen
    assert request.purpose == "extract"
    assert [m.role for m in request.messages] == ["system", "user"]
    assert request.output_schema == Book.model_json_schema()
    assert request.output_name == "book"


async def test_function_llm_async_and_pydantic_instance_answer() -> None:
    async def answer(request: LLMRequest) -> Book:
        await asyncio.sleep(0)
        return Book(title="Emma", year=1815)

    result = await LLMClient(FunctionLLM(answer)).generate("x", output=Book)
    assert result.output.title == "Emma"


async def test_json_schema_dict_output_returns_validated_plain_data() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    result = await LLMClient(FunctionLLM(lambda r: {"n": 3})).generate("x", output=schema)
    assert result.output == {"n": 3}


async def test_non_object_schema_is_wrapped_on_the_wire_and_unwrapped_in_the_result() -> None:
    schema = {"type": "array", "items": {"type": "string"}}
    model = FunctionLLM(lambda r: ["a", "b"])
    result = await LLMClient(model).generate("x", output=schema)
    assert result.output == ["a", "b"]
    wire = model.requests[0].output_schema
    assert wire is not None and wire["type"] == "object" and wire["properties"]["value"] == schema


async def test_free_text_when_no_output_is_given() -> None:
    result = await LLMClient(FunctionLLM(lambda r: "just text")).generate("hi")
    assert result.output == "just text"


async def test_invalid_schema_is_rejected_before_any_request() -> None:
    model = ScriptedLLM([])
    with pytest.raises(InvalidSchemaError, match="not a valid JSON Schema"):
        await LLMClient(model).generate("x", output={"type": 12})
    assert model.requests == []


async def test_invalid_then_valid_reasks_with_the_validation_error() -> None:
    model = ScriptedLLM(['{"title": "Dune", "year": "nineteen"}', {"title": "Dune", "year": 1965}])
    client = LLMClient(model)
    result = await client.generate("book?", purpose="extract", output=Book)
    assert result.output.year == 1965
    assert result.attempts == 2
    second = model.requests[1]
    assert second.attempt == 2
    assert [m.role for m in second.messages] == ["user", "assistant", "user"]
    reask = second.messages[-1].content[0].text  # type: ignore[union-attr]
    assert "$.year" in reask and "valid integer" in reask
    assert second.messages[1].content[0].text == '{"title": "Dune", "year": "nineteen"}'  # type: ignore[union-attr]
    assert result.usage.requests == 2
    assert result.usage == model_usage_sum(client)
    assert client.metrics.reasks == 1


def model_usage_sum(client: LLMClient) -> Usage:
    return client.metrics.total


async def test_malformed_json_text_is_reasked() -> None:
    model = ScriptedLLM(["{not json", '```json\n{"title": "X", "year": 1}\n```'])
    result = await LLMClient(model).generate("x", output=Book)
    assert result.output == Book(title="X", year=1)
    assert "not valid JSON" in model.requests[1].messages[-1].content[0].text  # type: ignore[union-attr]


async def test_reasks_run_out_into_output_validation_error() -> None:
    model = ScriptedLLM(['{"title": 1}'] * 3)
    client = LLMClient(model, max_reasks=2)
    with pytest.raises(OutputValidationError) as info:
        await client.generate("x", purpose="extract", output=Book)
    err = info.value
    assert err.attempts == 3
    assert err.last_output == {"title": 1}
    assert isinstance(err.usage, Usage) and err.usage.requests == 3 and err.usage.input_tokens > 0
    assert "after 3 attempt(s)" in str(err)
    assert client.metrics.failures == 1
    assert model.remaining == 0


async def test_max_reasks_zero_fails_on_the_first_invalid_answer() -> None:
    model = ScriptedLLM(['{"title": 1}', {"title": "ok", "year": 1}])
    with pytest.raises(OutputValidationError):
        await LLMClient(model).generate("x", output=Book, max_reasks=0)
    assert model.remaining == 1


async def test_refusal_and_empty_answers_raise_refusal_error() -> None:
    with pytest.raises(RefusalError, match="refused.*cannot help"):
        await LLMClient(ScriptedLLM([ModelResponse(refusal="I cannot help")])).generate("x", output=Book)
    with pytest.raises(RefusalError, match="no content"):
        await LLMClient(ScriptedLLM([ModelResponse(text="")])).generate("x", output=Book)
    with pytest.raises(RefusalError, match="no content"):
        await LLMClient(ScriptedLLM([ModelResponse()])).generate("x")


async def test_scripted_llm_fails_clearly_when_it_runs_out() -> None:
    model = ScriptedLLM([{"title": "A", "year": 1}])
    client = LLMClient(model)
    await client.generate("x", output=Book)
    with pytest.raises(TestDoubleError, match="ran out of answers at request 2 \\(purpose 'act'"):
        await client.generate("x", purpose="act", output=Book)


async def test_scripted_llm_rejects_answers_that_do_not_fit_the_schema() -> None:
    with pytest.raises(TestDoubleError, match="does not fit the 'book' schema"):
        await LLMClient(ScriptedLLM([{"title": "A"}])).generate("x", output=Book)
    with pytest.raises(TestDoubleError, match="unused"):
        ScriptedLLM([{"a": 1}]).assert_exhausted()


async def test_transport_errors_are_retried_then_succeed() -> None:
    model = ScriptedLLM([rate_limited(), ServerError("boom", provider="f", model="m", status=503), {"title": "A", "year": 1}])
    client = LLMClient(model, retry_policy=FAST)
    result = await client.generate("x", output=Book)
    assert result.output.title == "A"
    assert client.metrics.retries == 2
    assert result.attempts == 1  # retries are not re-asks
    assert client.metrics.total.requests == 1  # only answered requests are counted


async def test_retries_are_capped() -> None:
    model = ScriptedLLM([rate_limited()] * 3 + [{"title": "A", "year": 1}])
    with pytest.raises(RateLimitError):
        await LLMClient(model, retry_policy=FAST).generate("x", output=Book)
    assert model.remaining == 1  # 1 try + 2 retries


async def test_non_retryable_errors_fail_at_once() -> None:
    model = ScriptedLLM([AuthenticationError("bad key", provider="f", model="m", status=401), {"title": "A", "year": 1}])
    client = LLMClient(model, retry_policy=FAST)
    with pytest.raises(AuthenticationError):
        await client.generate("x", output=Book)
    assert model.remaining == 1 and client.metrics.retries == 0


async def test_retry_after_on_the_error_is_honoured() -> None:
    err = rate_limited()
    err.retry_after = 0.2  # type: ignore[attr-defined]
    model = ScriptedLLM([err, {"title": "A", "year": 1}])
    loop = asyncio.get_running_loop()
    start = loop.time()
    await LLMClient(model, retry_policy=FAST).generate("x", output=Book)
    assert loop.time() - start >= 0.19


async def test_metrics_totals_and_per_purpose() -> None:
    client = LLMClient(FunctionLLM(lambda r: {"title": "A", "year": 1}))
    a = await client.generate("one", purpose="observe", output=Book)
    b = await client.generate("two", purpose="observe", output=Book)
    c = await client.generate("three", purpose="extract", output=Book)
    m = client.metrics
    assert m.total.requests == 3
    assert m.by_purpose["observe"].requests == 2
    assert m.by_purpose["observe"].input_tokens == a.usage.input_tokens + b.usage.input_tokens
    assert m.by_purpose["extract"] == c.usage
    assert m.total.total_tokens == sum(u.total_tokens for u in (a.usage, b.usage, c.usage))
    assert all(u.wall_ms > 0 for u in (a.usage, b.usage, c.usage))
    assert m.as_dict()["by_purpose"]["extract"]["requests"] == 1


async def test_usage_limit_on_requests_stops_the_call_before_it_is_made() -> None:
    model = ScriptedLLM([{"title": "A", "year": 1}] * 2)
    client = LLMClient(model, usage_limits=UsageLimits(max_requests=1))
    await client.generate("x", output=Book)
    with pytest.raises(UsageLimitExceededError, match="max_requests=1"):
        await client.generate("x", output=Book)
    assert len(model.requests) == 1 and model.remaining == 1


async def test_usage_limit_counts_reasks() -> None:
    model = ScriptedLLM(['{"title": 1}', {"title": "A", "year": 1}])
    with pytest.raises(UsageLimitExceededError):
        await LLMClient(model, usage_limits=UsageLimits(max_requests=1)).generate("x", output=Book)
    assert len(model.requests) == 1


async def test_token_limit_uses_an_estimate_of_the_next_input() -> None:
    model = ScriptedLLM([{"title": "A", "year": 1}])
    client = LLMClient(model, usage_limits=UsageLimits(max_total_tokens=50))
    with pytest.raises(UsageLimitExceededError, match="max_total_tokens=50"):
        await client.generate("word " * 100, output=Book)
    assert model.requests == []


async def test_custom_model_object_gets_the_whole_machinery() -> None:
    class MyModel:
        model_name = "mine"

        def __init__(self) -> None:
            self.calls = 0

        async def request(self, request: LLMRequest) -> ModelResponse:
            self.calls += 1
            if self.calls == 1:
                return ModelResponse(text='{"title": "A"}', usage=Usage(input_tokens=10, output_tokens=2))
            return ModelResponse(output={"title": "A", "year": 2}, usage=Usage(input_tokens=12, output_tokens=3))

    model = MyModel()
    client = LLMClient(model)
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("STAGEHAND_BLOCK_MODEL_REQUESTS", raising=False)
        result = await client.generate("x", purpose="act", output=Book)
    assert result.output.year == 2 and result.attempts == 2
    assert result.usage.input_tokens == 22 and result.usage.output_tokens == 5 and result.usage.requests == 2
    assert client.model_name == "mine"


async def test_custom_model_returning_the_wrong_type_or_raising_is_an_llm_error() -> None:
    class Wrong:
        model_name = "wrong"
        is_test_double = True

        async def request(self, request: LLMRequest) -> Any:
            return {"title": "A"}

    with pytest.raises(LLMError, match="must return a stagehand_py.llm.ModelResponse"):
        await LLMClient(Wrong()).generate("x", output=Book)

    class Raises:
        model_name = "raises"
        is_test_double = True

        async def request(self, request: LLMRequest) -> ModelResponse:
            raise RuntimeError("kaput")

    with pytest.raises(LLMError, match="raised RuntimeError: kaput") as info:
        await LLMClient(Raises()).generate("x")
    assert isinstance(info.value.__cause__, RuntimeError)


def test_model_options_for_a_model_object_are_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="api_key configure model strings only"):
        LLMClient(FunctionLLM(lambda r: {}), api_key="k")
    with pytest.raises(ConfigurationError, match="must be a 'provider/model' string"):
        LLMClient(42)  # type: ignore[arg-type]
