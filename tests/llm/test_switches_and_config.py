"""Kill switch, capture, configuration, redaction, inference log, and the public surface."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from pydantic import BaseModel

import stagehand_py.llm as llm
import stagehand_py.testing as testing
from stagehand_py import ConfigurationError, LLMError, ModelRequestBlockedError, OutputValidationError, StagehandError
from stagehand_py.llm import ImagePart, LLMClient, LLMRequest, ModelResponse, TextPart, UserMessage
from stagehand_py.testing import FunctionLLM, ScriptedLLM, block_model_requests, capture_requests


class Book(BaseModel):
    title: str
    year: int


class RealishModel:
    """Not a test double: the kill switch must stop it."""

    model_name = "realish"

    def __init__(self) -> None:
        self.calls = 0

    async def request(self, request: LLMRequest) -> ModelResponse:
        self.calls += 1
        return ModelResponse(output={"title": "A", "year": 1})


@pytest.fixture(autouse=True)
def _no_env_block(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(llm.BLOCK_ENV_VAR, raising=False)


async def test_kill_switch_context_manager_blocks_real_models_only() -> None:
    real = RealishModel()
    client = LLMClient(real)
    with block_model_requests():
        with pytest.raises(ModelRequestBlockedError, match="realish.*purpose 'act'.*block_model_requests"):
            await client.generate("x", purpose="act", output=Book)
        # doubles still answer
        assert (await LLMClient(FunctionLLM(lambda r: {"title": "A", "year": 1})).generate("x", output=Book)).output.year == 1
    assert real.calls == 0
    await client.generate("x", output=Book)  # switch off again after the block
    assert real.calls == 1


async def test_kill_switch_env_var_is_read_at_request_time(monkeypatch: pytest.MonkeyPatch) -> None:
    real = RealishModel()
    client = LLMClient(real)  # made before the env var is set
    monkeypatch.setenv("STAGEHAND_BLOCK_MODEL_REQUESTS", "1")
    with pytest.raises(ModelRequestBlockedError):
        await client.generate("x", output=Book)
    monkeypatch.setenv("STAGEHAND_BLOCK_MODEL_REQUESTS", "0")
    await client.generate("x", output=Book)
    assert real.calls == 1
    assert testing.model_requests_blocked() is False


async def test_kill_switch_is_per_task_context() -> None:
    real = RealishModel()
    client = LLMClient(real)
    entered = asyncio.Event()
    release = asyncio.Event()

    async def blocked_task() -> None:
        with block_model_requests():
            entered.set()
            await release.wait()

    task = asyncio.create_task(blocked_task())
    await entered.wait()
    await client.generate("x", output=Book)  # the other task's switch does not apply here
    release.set()
    await task
    assert real.calls == 1


async def test_capture_requests_records_requests_responses_and_errors() -> None:
    model = ScriptedLLM(['{"title": 1}', {"title": "A", "year": 1}, {"title": "B", "year": 2}])
    client = LLMClient(model, max_reasks=1)
    with capture_requests() as outer:
        await client.generate("first", purpose="extract", output=Book)
        with capture_requests() as inner:
            await client.generate("second", purpose="observe", output=Book)
        with pytest.raises(StagehandError):
            await client.generate("third", purpose="act", output=Book)  # script ran out
    await LLMClient(FunctionLLM(lambda r: "t")).generate("outside")
    assert [c.request.purpose for c in outer] == ["extract", "extract", "observe", "act"]
    assert [c.request.attempt for c in outer] == [1, 2, 1, 1]
    assert [c.request.purpose for c in inner] == ["observe"]
    assert outer[0].response is not None and outer[0].response.text == '{"title": 1}'
    assert outer[3].response is None and outer[3].error is not None
    assert outer[0].model == "scripted"


def test_model_string_without_a_key_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY.*base_url="):
        LLMClient("openai/gpt-4.1-mini")
    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY"):
        LLMClient("anthropic/claude-sonnet-4-5")
    # a local OpenAI-compatible server needs no key
    client = LLMClient("openai/llama3.2", base_url="http://127.0.0.1:11434/v1")
    assert client.model.profile.output_mode == "prompted"  # type: ignore[attr-defined]


def test_unknown_provider_and_malformed_model_strings(monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in ("gpt-4.1-mini", "mistral/large", "openai/"):
        with pytest.raises(ConfigurationError, match="<provider>/<model name>"):
            LLMClient(bad, api_key="k")


def test_keys_and_profiles_are_per_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    a = LLMClient("openai/gpt-4.1-mini")
    b = LLMClient("openai/gpt-4.1-mini", api_key="arg-key", output_mode="tools")
    assert a.model._api_key == "env-key" and b.model._api_key == "arg-key"  # type: ignore[attr-defined]
    assert a.model.profile.output_mode == "json_schema"  # type: ignore[attr-defined]
    assert b.model.profile.output_mode == "tools"  # type: ignore[attr-defined]
    assert "env-key" not in repr(a.model) and "arg-key" not in repr(b)
    assert LLMClient("anthropic/claude-sonnet-4-5", api_key="k").model.profile.output_mode == "tools"  # type: ignore[attr-defined]
    assert a.metrics is not b.metrics


async def test_secrets_are_redacted_from_error_messages() -> None:
    secret = "hunter2-pass"
    model = ScriptedLLM([json.dumps({"title": secret, "year": "x"})] * 2)
    with pytest.raises(OutputValidationError) as info:
        await LLMClient(model, max_reasks=1, secrets=[secret]).generate("x", output=Book)
    # the model does see it (it was its own answer), the error does not show it
    assert secret not in str(info.value)
    assert secret not in json.dumps(info.value.last_output)
    assert "%secret%" in json.dumps(info.value.last_output)

    class Leaky:
        model_name = "leaky"
        is_test_double = True

        async def request(self, request: LLMRequest) -> ModelResponse:
            raise ValueError(f"cannot use value {secret}")

    with pytest.raises(LLMError) as leak:
        await LLMClient(Leaky()).generate("x", secrets=[secret])
    assert secret not in str(leak.value) and secret not in str(leak.value.__cause__)


async def test_inference_log_is_off_by_default_and_redacts_when_on(tmp_path: Path) -> None:
    client = LLMClient(FunctionLLM(lambda r: {"title": "A", "year": 1}))
    await client.generate("x", output=Book)
    assert list(tmp_path.iterdir()) == []

    log_dir = tmp_path / "log"
    model = ScriptedLLM(['{"title": "pw=s3cr3t", "year": "bad"}', {"title": "ok", "year": 1}])
    client = LLMClient(model, inference_log_dir=log_dir, secrets=["s3cr3t"])
    message = UserMessage([
        TextPart(text="type s3cr3t and per-call-value"),
        TextPart(text="marked part", secret=True),
        ImagePart(data=b"\x89PNG" + b"0" * 96, media_type="image/png"),
    ])
    await client.generate([message], purpose="act", output=Book, secrets=["per-call-value"])
    files = sorted(log_dir.iterdir())
    assert [f.name.split("-", 2)[2] for f in files] == ["act-a1.json", "act-a2.json"]
    text = "".join(f.read_text() for f in files)
    for hidden in ("s3cr3t", "per-call-value", "marked part"):
        assert hidden not in text
    first = json.loads(files[0].read_text())
    parts = first["request"]["messages"][0]["content"]
    assert parts[0]["text"] == "type %secret% and %secret%"
    assert parts[1]["text"] == "%secret%"
    assert parts[2] == {"type": "image", "media_type": "image/png", "bytes": 100}
    assert first["response"]["text"] == '{"title": "pw=%secret%", "year": "bad"}'
    assert first["request"]["output_schema"]["title"] == "Book"
    assert first["response"]["usage"]["requests"] == 1
    second = json.loads(files[1].read_text())
    assert second["request"]["attempt"] == 2 and second["response"]["output"] == {"title": "ok", "year": 1}



async def test_a_note_goes_to_the_inference_log_redacted_and_nowhere_without_one(tmp_path: Path) -> None:
    # What an operation made of the answers (the near misses it repaired) sits beside the calls.
    await LLMClient(FunctionLLM(lambda r: {})).log_note("extract", {"repairs": []})  # no log: nothing, no error
    client = LLMClient(FunctionLLM(lambda r: {}), inference_log_dir=tmp_path, secrets=["s3cr3t"])
    await client.log_note("extract", {"repairs": [{"answered": "s3cr3t and per-call"}]}, secrets=["per-call"])
    (note,) = tmp_path.iterdir()
    assert note.name.endswith("-extract-note.json")
    record = json.loads(note.read_text())
    assert record["purpose"] == "extract" and record["note"] == {"repairs": [{"answered": "%secret% and %secret%"}]}

def test_public_surface_is_pinned() -> None:
    assert set(llm.__all__) == {
        "LLMClient", "GenerateResult", "LLMRequest", "ModelResponse", "LanguageModel", "Message",
        "SystemMessage", "UserMessage", "AssistantMessage", "ToolMessage", "TextPart", "ImagePart",
        "ImageMediaType", "ToolCallPart", "ToolResultPart", "PendingSafetyCheck", "ComputerTool", "ProviderTool",
        "Profile", "OutputMode", "default_profile",
        "RetryPolicy", "Usage", "UsageLimits", "ModelPrice", "PRICES_AS_OF", "price_for", "Metrics", "Redactor", "REDACTED", "CapturedCall",
        "BLOCK_ENV_VAR", "ResponseFormat", "llama_cpp_server_profile", "LocalModel", "ModelLoad", "release_local_models",
            "Timing", "LOCAL_TIMING",
        "default_model", "ModelChoice", "EMBEDDED_MODEL_FILE", "HOSTED_DEFAULTS", "LOCAL_TOKEN_BUDGET",
    }
    assert set(testing.__all__) == {
        "FunctionLLM", "ScriptedLLM", "Answer", "block_model_requests", "capture_requests",
        "model_requests_blocked", "CapturedCall", "BLOCK_ENV_VAR", "Cassette", "CassetteMode",
        "use_cassette", "SCRUBBED_HEADERS",
    }
    for name in llm.__all__:
        assert hasattr(llm, name), name
    for name in testing.__all__:
        assert hasattr(testing, name), name
