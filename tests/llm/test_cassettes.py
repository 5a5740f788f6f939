"""Record real SDK traffic once (here: from the loopback server), replay without a key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stagehand_py import CassetteError, ModelRequestBlockedError, ServerError
from stagehand_py.llm import LLMClient
from stagehand_py.testing import Cassette, block_model_requests, use_cassette

from ._fake_provider import FakeProvider, anthropic_message, chat_completion, error_body
from ._sdk_cases import FAST, Book, dead_url


async def test_record_once_then_replay_without_key_or_server(fake: FakeProvider, tmp_path: Path) -> None:
    path = tmp_path / "cassettes" / "book.json"
    fake.reply(error_body("slow down", "rate_limit_error"), status=429, headers={"retry-after-ms": "1", "set-cookie": "s=1"})
    fake.reply(chat_completion('{"title": "Dune", "year": 1965}'))
    recorder = LLMClient("openai/gpt-4.1-mini", api_key="sk-live-SECRET", base_url=f"{fake.url}/v1",
                         output_mode="json_schema", retry_policy=FAST)
    with use_cassette(path, mode="once") as cassette:
        assert not cassette.replaying
        recorded = await recorder.generate("Dune (1965)", purpose="extract", output=Book)
    assert len(fake.seen) == 2
    text = path.read_text()
    assert "sk-live-SECRET" not in text and "authorization" not in text.lower() and "set-cookie" not in text
    data = json.loads(text)
    assert [i["response"]["status"] for i in data["interactions"]] == [429, 200]
    assert data["interactions"][1]["request"]["json"]["response_format"]["json_schema"]["name"] == "book"

    # CI: no key in the environment, nothing listening, the kill switch on
    replayer = LLMClient("openai/gpt-4.1-mini", base_url=f"{dead_url()}/v1", output_mode="json_schema", retry_policy=FAST)
    with block_model_requests(), use_cassette(path, mode="once") as cassette:
        assert cassette.replaying
        replayed = await replayer.generate("Dune (1965)", purpose="extract", output=Book)
    assert replayed.output == recorded.output
    assert replayed.usage.input_tokens == recorded.usage.input_tokens
    assert replayer.metrics.retries == 1  # the recorded 429 replays too
    assert len(fake.seen) == 2 and cassette.unused == 0


async def test_replay_miss_is_a_clear_cassette_error_not_a_retry(fake: FakeProvider, tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    fake.reply(chat_completion('{"title": "A", "year": 1}'))
    c = LLMClient("openai/m", api_key="k", base_url=f"{fake.url}/v1", output_mode="json_schema", retry_policy=FAST)
    with use_cassette(path, mode="all"):
        await c.generate("first prompt", output=Book)
    with use_cassette(path, mode="none"), pytest.raises(CassetteError, match="no unused recording for POST /v1/chat/completions") as info:
        await c.generate("a different prompt", output=Book)
    assert "re-record with mode='all'" in str(info.value)
    assert c.metrics.retries == 0 and len(fake.seen) == 1


def test_missing_cassette_in_replay_mode_and_bad_mode(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="does not exist.*mode='once'"):
        Cassette(tmp_path / "nope.json", mode="none")
    with pytest.raises(CassetteError, match="not one of"):
        Cassette(tmp_path / "x.json", mode="sometimes")  # type: ignore[arg-type]
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(CassetteError, match="cannot be read"):
        Cassette(broken, mode="none")


async def test_mode_all_rerecords_and_recording_is_blocked_by_the_kill_switch(fake: FakeProvider, tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    c = LLMClient("anthropic/claude-test-model", api_key="sk-ant-SECRET", base_url=fake.url, retry_policy=FAST)
    fake.reply(anthropic_message(tool_use=("book", {"title": "Old", "year": 1})))
    with use_cassette(path, mode="all"):
        assert (await c.generate("x", output=Book)).output.title == "Old"
    fake.reply(anthropic_message(tool_use=("book", {"title": "New", "year": 2})))
    with use_cassette(path, mode="all"):
        assert (await c.generate("x", output=Book)).output.title == "New"
    data = json.loads(path.read_text())
    assert len(data["interactions"]) == 1 and "sk-ant-SECRET" not in path.read_text()
    with block_model_requests(), use_cassette(path, mode="all"), pytest.raises(ModelRequestBlockedError):
        await c.generate("x", output=Book)
    assert len(fake.seen) == 2
    # and it replays for anthropic too, without a key
    keyless = LLMClient("anthropic/claude-test-model", base_url=dead_url(), retry_policy=FAST)
    with use_cassette(path, mode="none"):
        assert (await keyless.generate("x", output=Book)).output.title == "New"


async def test_http_client_argument_and_secret_redaction_in_bodies(fake: FakeProvider, tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    fake.reply(chat_completion('{"title": "pw is hunter2", "year": 1}'))
    rec = Cassette(path, mode="once", secrets=["hunter2"])
    c = LLMClient("openai/m", api_key="k", base_url=f"{fake.url}/v1", output_mode="json_schema",
                  http_client=rec.http_client(), retry_policy=FAST)
    await c.generate("type hunter2", output=Book)
    assert "hunter2" not in path.read_text() and fake.seen[0].body["messages"][0]["content"] == "type hunter2"
    play = Cassette(path, mode="none", secrets=["hunter2"])
    c2 = LLMClient("openai/m", base_url=f"{dead_url()}/v1", output_mode="json_schema",
                   http_client=play.http_client(), retry_policy=FAST)
    result = await c2.generate("type hunter2", output=Book)  # matches on the redacted body
    assert result.output.title == "pw is %secret%"


async def test_recorded_server_error_replays_as_the_same_error(fake: FakeProvider, tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    for _ in range(3):
        fake.reply(error_body("boom", "server_error"), status=500)
    c = LLMClient("openai/m", api_key="k", base_url=f"{fake.url}/v1", output_mode="json_schema", retry_policy=FAST)
    with use_cassette(path, mode="once"), pytest.raises(ServerError):
        await c.generate("x", output=Book)
    with use_cassette(path, mode="none"), pytest.raises(ServerError, match="HTTP 500: boom"):
        await c.generate("x", output=Book)
