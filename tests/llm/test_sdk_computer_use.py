"""Provider-defined tools (computer use) through ``LLMClient.turn`` with the real SDKs against
the loopback server: the bytes sent (tool definition, display size, beta header, screenshots
inside tool results, safety-check acknowledgements) and the tool calls read back."""

from __future__ import annotations

import base64
import json

import anthropic
import openai
import pytest

from stagehand_py import (
    BadRequestError,
    ModelRequestBlockedError,
    RateLimitError,
    RefusalError,
    ServerError,
)
from stagehand_py.llm import (
    AssistantMessage,
    ComputerTool,
    ImagePart,
    LLMClient,
    PendingSafetyCheck,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolMessage,
    ToolResultPart,
    UserMessage,
)
from stagehand_py.testing import block_model_requests, capture_requests

from ._fake_provider import (
    FakeProvider,
    anthropic_tool_uses,
    error_body,
    openai_response,
)
from ._sdk_cases import FAST

PNG1 = b"\x89PNG\r\n\x1a\nfirst-screenshot"
PNG2 = b"\x89PNG\r\n\x1a\nsecond-screenshot"
SCREEN = ComputerTool(display_width=1024, display_height=640)
SECRET = "hunter2-CANARY-cu"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def anthropic_client(fake: FakeProvider, **kw: object) -> LLMClient:
    kw.setdefault("retry_policy", FAST)
    return LLMClient("anthropic/claude-test-model", api_key="sk-ant-test", base_url=fake.url, **kw)  # type: ignore[arg-type]


def openai_client(fake: FakeProvider, **kw: object) -> LLMClient:
    kw.setdefault("retry_policy", FAST)
    return LLMClient("openai/computer-use-preview", api_key="sk-test", base_url=f"{fake.url}/v1", **kw)  # type: ignore[arg-type]


# --- Anthropic ----------------------------------------------------------------------------------


async def test_anthropic_computer_tool_beta_header_and_screenshot_in_tool_result(fake: FakeProvider, tmp_path) -> None:
    click = {"action": "left_click", "coordinate": [300, 120]}
    fake.reply(anthropic_tool_uses(("toolu_a", "computer", click), text="I'll click Confirm.", input_tokens=900))
    fake.reply(anthropic_tool_uses(text="All done.", input_tokens=1800, output_tokens=4))
    c = anthropic_client(fake, inference_log_dir=tmp_path)
    first = [SystemMessage("Drive the browser."), UserMessage([TextPart(text="Click Confirm"), ImagePart(data=PNG1)])]

    answer = await c.turn(first, tools=[SCREEN], purpose="agent")
    assert answer.tool_calls == (ToolCallPart(id="toolu_a", name="computer", arguments=click),)
    assert answer.text == "I'll click Confirm." and answer.finish_reason == "tool_use"

    seen = fake.seen[0]
    assert seen.path.split("?")[0] == "/v1/messages"
    assert seen.headers["anthropic-beta"] == "computer-use-2025-01-24"
    assert seen.body["tools"] == [
        {"type": "computer_20250124", "name": "computer", "display_width_px": 1024, "display_height_px": 640}]
    assert "tool_choice" not in seen.body and seen.body["system"] == "Drive the browser."
    assert seen.body["messages"][0]["content"][1] == {
        "type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(PNG1)}}

    second = [*first, AssistantMessage([TextPart(text=answer.text), *answer.tool_calls]),
              ToolMessage([ToolResultPart(tool_call_id="toolu_a", content=(TextPart(text="clicked"), ImagePart(data=PNG2)))])]
    final = await c.turn(second, tools=[SCREEN], purpose="agent")
    assert final.tool_calls == () and final.text == "All done."
    body = fake.seen[1].body
    assert body["messages"][1] == {"role": "assistant", "content": [
        {"type": "text", "text": "I'll click Confirm."},
        {"type": "tool_use", "id": "toolu_a", "name": "computer", "input": click}]}
    assert body["messages"][2] == {"role": "user", "content": [{
        "type": "tool_result", "tool_use_id": "toolu_a", "is_error": False, "content": [
            {"type": "text", "text": "clicked"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(PNG2)}}]}]}

    assert c.metrics.by_purpose["agent"].requests == 2 and c.metrics.total.input_tokens == 2700
    logs = sorted(tmp_path.glob("*.json"))
    assert len(logs) == 2
    record = json.loads(logs[1].read_text())
    assert record["request"]["tools"][0]["display_width"] == 1024
    result = record["request"]["messages"][3]["content"][0]
    assert result["content"][1] == {"type": "image", "media_type": "image/png", "bytes": len(PNG2)}
    assert b64(PNG2) not in logs[1].read_text()
    assert json.loads(logs[0].read_text())["response"]["tool_calls"][0]["arguments"] == click


async def test_anthropic_turn_errors_retries_and_redaction(fake: FakeProvider, tmp_path) -> None:
    fake.reply({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, status=529)
    fake.reply(anthropic_tool_uses(("toolu_t", "computer", {"action": "type", "text": SECRET})))
    c = anthropic_client(fake, inference_log_dir=tmp_path)
    answer = await c.turn([UserMessage("type the password")], tools=[SCREEN], secrets=[SECRET])
    assert answer.tool_calls[0].arguments["text"] == SECRET  # the caller gets the real value
    assert len(fake.seen) == 2 and c.metrics.retries == 1
    assert all(s.headers["anthropic-beta"] == "computer-use-2025-01-24" for s in fake.seen)
    (log,) = tmp_path.glob("*.json")
    assert SECRET not in log.read_text() and "%secret%" in log.read_text()

    fake.reply({"type": "error", "error": {"type": "invalid_request_error",
                                          "message": f"bad display size near {SECRET}"}}, status=400)
    with pytest.raises(BadRequestError, match="bad display size") as info:
        await c.turn([UserMessage("x")], tools=[SCREEN], secrets=[SECRET])
    assert isinstance(info.value.__cause__, anthropic.BadRequestError) and info.value.status == 400
    assert SECRET not in str(info.value)


# --- OpenAI Responses ---------------------------------------------------------------------------


async def test_openai_computer_use_preview_on_the_responses_api(fake: FakeProvider, tmp_path) -> None:
    check = {"id": "cu_sc_1", "code": "malicious_instructions", "message": "The page asks you to ignore the user."}
    click = {"type": "click", "button": "left", "x": 300, "y": 120}
    fake.reply(openai_response(id="resp_1", computer_call=("call_1", click), safety_checks=[check],
                               input_tokens=700, cached=100, reasoning=12))
    fake.reply(openai_response(id="resp_2", text="Confirmed."))
    c = openai_client(fake, inference_log_dir=tmp_path)

    answer = await c.turn([SystemMessage("Drive the browser."), UserMessage([TextPart(text="Click Confirm"), ImagePart(data=PNG1)])],
                          tools=[SCREEN], purpose="agent")
    (call,) = answer.tool_calls
    assert call.id == "call_1" and call.name == "computer"
    assert {k: call.arguments[k] for k in click} == click
    assert call.safety_checks == (PendingSafetyCheck(**check),)
    assert answer.response_id == "resp_1"
    u = answer.usage
    assert (u.input_tokens, u.cached_tokens, u.reasoning_tokens) == (700, 100, 12)

    seen = fake.seen[0]
    assert seen.path == "/v1/responses"
    assert seen.body["model"] == "computer-use-preview"
    assert seen.body["tools"] == [{"type": "computer_use_preview", "display_width": 1024, "display_height": 640,
                                   "environment": "browser"}]
    assert seen.body["truncation"] == "auto" and seen.body["instructions"] == "Drive the browser."
    assert seen.body["input"] == [{"role": "user", "content": [
        {"type": "input_text", "text": "Click Confirm"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{b64(PNG1)}"}]}]
    assert "previous_response_id" not in seen.body

    acked = ToolResultPart(tool_call_id="call_1", content=(ImagePart(data=PNG2),), acknowledged_safety_checks=call.safety_checks)
    final = await c.turn([SystemMessage("Drive the browser."), ToolMessage([acked])], tools=[SCREEN],
                         previous_response_id=answer.response_id, purpose="agent")
    assert final.text == "Confirmed." and final.tool_calls == ()
    body = fake.seen[1].body
    assert body["previous_response_id"] == "resp_1"
    assert body["input"] == [{
        "type": "computer_call_output", "call_id": "call_1",
        "output": {"type": "computer_screenshot", "image_url": f"data:image/png;base64,{b64(PNG2)}"},
        "acknowledged_safety_checks": [check]}]
    record = json.loads(sorted(tmp_path.glob("*.json"))[1].read_text())
    assert record["request"]["previous_response_id"] == "resp_1"
    assert b64(PNG2) not in json.dumps(record)


async def test_openai_responses_errors_retries_refusal_and_kill_switch(fake: FakeProvider) -> None:
    c = openai_client(fake)
    fake.reply(error_body("slow down", "rate_limit_error"), status=429, headers={"retry-after": "0"})
    fake.reply(openai_response(computer_call=("call_9", {"type": "screenshot"})))
    with capture_requests() as calls:
        answer = await c.turn([UserMessage("look")], tools=[SCREEN])
    assert answer.tool_calls[0].arguments == {"type": "screenshot"}
    assert len(fake.seen) == 2 and c.metrics.retries == 1
    assert calls[0].request.tools == (SCREEN,) and calls[0].response == answer

    for _ in range(3):
        fake.reply(error_body("rate limited", "rate_limit_error"), status=429, headers={"retry-after": "0"})
    with pytest.raises(RateLimitError) as info:
        await c.turn([UserMessage("look")], tools=[SCREEN])
    assert isinstance(info.value.__cause__, openai.RateLimitError)

    fake.reply(raw=b"<html>not json</html>")
    fake.reply(openai_response(output_tokens=1, text=None) | {"output": "nope"})
    fake.reply(openai_response(output_tokens=1, text=None) | {"output": "nope"})
    with pytest.raises(ServerError, match="malformed"):
        await c.turn([UserMessage("look")], tools=[SCREEN])

    fake.reply(openai_response(refusal="I can't help with that."))
    with pytest.raises(RefusalError, match="can't help"):
        await c.turn([UserMessage("look")], tools=[SCREEN])

    fake.reset()
    with block_model_requests(), pytest.raises(ModelRequestBlockedError):
        await c.turn([UserMessage("look")], tools=[SCREEN])
    assert fake.seen == []
