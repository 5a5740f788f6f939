"""Computer use with the providers' own tools, end to end: the real anthropic/openai SDKs talk to
the loopback server, which scripts native computer actions at screenshot coordinates; the agent
runs them on a real page (1280x720 viewport, 640x360 screenshots) and the DOM shows which
element was hit. The bytes sent are checked too: tool definition, display size, beta header,
screenshots in tool results, safety-check acknowledgements."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from llm._fake_provider import (
    FakeProvider,
    anthropic_message,
    anthropic_tool_uses,
    openai_response,
)
from pydantic import BaseModel

from stagehand_py import Stagehand
from stagehand_py.agent.modes.cua._actions import png_size
from stagehand_py.llm import LLMClient, RetryPolicy

SECRET = "cua-native-CANARY-7c1"
FAST = RetryPolicy(max_retries=1, initial_backoff=0.001, max_backoff=0.002, jitter=0)
VIEWPORT = (1280, 720)
SCREEN = (640, 360)  # the viewport fitted into cua_screen=(640, 480)


class Outcome(BaseModel):
    clicked: str


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


@pytest.fixture
def provider(fake: FakeProvider) -> Iterator[FakeProvider]:
    with fake.emptied() as empty:
        yield empty


async def centres(page: Any, server: Any) -> dict[str, tuple[int, int]]:
    """Each element's centre in screenshot pixels (what a computer-use model would answer)."""
    await page.set_viewport_size({"width": VIEWPORT[0], "height": VIEWPORT[1]})
    await page.goto(server.url("agent/cua.html"))
    out = {}
    for key in ("target", "decoy", "twice", "field"):
        box = await page.locator(f"#{key}").bounding_box()
        out[key] = (round((box["x"] + box["width"] / 2) * SCREEN[0] / VIEWPORT[0]),
                    round((box["y"] + box["height"] / 2) * SCREEN[1] / VIEWPORT[1]))
    return out


def png_of_data_url(url: str) -> bytes:
    head, data = url.split(",", 1)
    assert head == "data:image/png;base64"
    return base64.b64decode(data)


async def test_anthropic_computer_tool_drives_the_page(page, server, provider: FakeProvider) -> None:
    at = await centres(page, server)
    provider.reply(anthropic_tool_uses(("toolu_1", "computer", {"action": "left_click", "coordinate": list(at["target"])}),
                                       text="Clicking Confirm."))
    provider.reply(anthropic_tool_uses(("toolu_2", "computer", {"action": "double_click", "coordinate": list(at["twice"])})))
    provider.reply(anthropic_tool_uses(("toolu_3", "computer", {"action": "left_click", "coordinate": list(at["field"])})))
    provider.reply(anthropic_tool_uses(("toolu_4", "computer", {"action": "type", "text": "%query%"})))
    provider.reply(anthropic_tool_uses(("toolu_5", "computer", {"action": "key", "text": "Return"})))
    provider.reply(anthropic_message(text="Confirmed, opened and searched."))
    provider.reply(anthropic_message(tool_use=("outcome", {"clicked": "Confirm"})))  # the structured output

    client = LLMClient("anthropic/claude-test-model", api_key="sk-ant-test", base_url=provider.url, retry_policy=FAST)
    # The provider's computer-tool protocol alone: no verdict request (self_check) among its turns.
    agent = Stagehand(page, model=client).agent(mode="cua", cua_screen=(640, 480), self_check=False)
    result = await agent.execute("Confirm, open, and search", max_steps=10, variables={"query": SECRET}, output=Outcome)

    assert result.status == "done", result.message
    assert result.output == Outcome(clicked="Confirm") and result.message == "Confirmed, opened and searched."
    assert await page.locator("#log li").all_inner_texts() == ["target", "double", f"enter:{SECRET}"]
    assert [s.tool for s in result.steps] == ["click", "double_click", "click", "type", "keypress", "done"]

    turns = [s for s in provider.seen if s.body.get("tools", [{}])[0].get("type") == "computer_20250124"]
    assert len(turns) == 6 and len(provider.seen) == 7
    for seen in turns:
        assert seen.headers["anthropic-beta"] == "computer-use-2025-01-24"
        assert seen.body["tools"] == [{"type": "computer_20250124", "name": "computer",
                                       "display_width_px": SCREEN[0], "display_height_px": SCREEN[1]}]
    first = turns[0].body["messages"]
    image = first[0]["content"][-1]
    assert image["type"] == "image" and png_size(base64.b64decode(image["source"]["data"])) == SCREEN
    # the second turn replays the tool_use and answers it with a tool_result holding the new screenshot
    second = turns[1].body["messages"]
    assert second[1] == {"role": "assistant", "content": [
        {"type": "text", "text": "Clicking Confirm."},
        {"type": "tool_use", "id": "toolu_1", "name": "computer",
         "input": {"action": "left_click", "coordinate": list(at["target"])}}]}
    result_block = second[2]["content"][0]
    assert result_block["type"] == "tool_result" and result_block["tool_use_id"] == "toolu_1"
    shot = result_block["content"][1]
    assert shot["type"] == "image" and png_size(base64.b64decode(shot["source"]["data"])) == SCREEN
    assert shot["source"]["data"] != image["source"]["data"]  # taken after the click
    # long runs keep only the last three screenshots
    last = turns[-1].body["messages"]
    images = [b for m in last for blk in m["content"] if isinstance(blk, dict)
              for b in ([blk] + (blk["content"] if isinstance(blk.get("content"), list) else [])) if b.get("type") == "image"]
    assert len(images) == 3
    # the structured output call is an ordinary one (no computer tool, no beta header)
    final = provider.seen[-1]
    assert "anthropic-beta" not in final.headers and final.body["tool_choice"] == {"type": "tool", "name": "outcome"}
    # the variable's value never reaches the model or the result
    assert all(SECRET not in json.dumps(s.body) for s in provider.seen)
    assert SECRET not in result.model_dump_json()


async def test_openai_computer_use_preview_with_an_approved_safety_check(page, server, provider: FakeProvider) -> None:
    at = await centres(page, server)
    check = {"id": "sc_1", "code": "malicious_instructions", "message": "The page may be steering you."}
    x, y = at["target"]
    provider.reply(openai_response(id="resp_1", computer_call=("call_1", {"type": "click", "button": "left", "x": x, "y": y}),
                                   safety_checks=[check]))
    x, y = at["twice"]
    provider.reply(openai_response(id="resp_2", computer_call=("call_2", {"type": "double_click", "x": x, "y": y})))
    x, y = at["field"]
    provider.reply(openai_response(id="resp_3", computer_call=("call_3", {"type": "click", "button": "left", "x": x, "y": y})))
    provider.reply(openai_response(id="resp_4", computer_call=("call_4", {"type": "type", "text": "%query%"})))
    provider.reply(openai_response(id="resp_5", computer_call=("call_5", {"type": "keypress", "keys": ["ENTER"]})))
    provider.reply(openai_response(id="resp_6", text="Done: confirmed, opened, searched."))
    asked = []

    def approve(safety_check):
        asked.append(safety_check)
        return True

    client = LLMClient("openai/computer-use-preview", api_key="sk-test", base_url=f"{provider.url}/v1", retry_policy=FAST)
    agent = Stagehand(page, model=client).agent(mode="cua", cua_screen=(640, 480), on_safety_check=approve,
                                                self_check=False)  # the computer-use protocol alone
    result = await agent.execute("Confirm, open, and search", max_steps=10, variables={"query": SECRET})

    assert result.status == "done", result.message
    assert await page.locator("#log li").all_inner_texts() == ["target", "double", f"enter:{SECRET}"]
    assert [(c.id, c.code) for c in asked] == [("sc_1", "malicious_instructions")]

    seen = provider.seen
    assert len(seen) == 6 and all(s.path == "/v1/responses" for s in seen)
    first = seen[0].body
    assert first["tools"] == [{"type": "computer_use_preview", "display_width": SCREEN[0], "display_height": SCREEN[1],
                               "environment": "browser"}]
    assert first["truncation"] == "auto" and "previous_response_id" not in first
    image = first["input"][0]["content"][-1]
    assert image["type"] == "input_image" and png_size(png_of_data_url(image["image_url"])) == SCREEN

    output = seen[1].body["input"][0]
    assert seen[1].body["previous_response_id"] == "resp_1"
    assert output["type"] == "computer_call_output" and output["call_id"] == "call_1"
    assert output["acknowledged_safety_checks"] == [check]
    assert output["output"]["type"] == "computer_screenshot"
    assert png_size(png_of_data_url(output["output"]["image_url"])) == SCREEN
    later = seen[2].body["input"][0]
    assert later["call_id"] == "call_2" and "acknowledged_safety_checks" not in later
    assert [s.body.get("previous_response_id") for s in seen[1:]] == ["resp_1", "resp_2", "resp_3", "resp_4", "resp_5"]
    assert all(SECRET not in json.dumps(s.body) for s in seen)


async def test_openai_declined_safety_check_stops_before_the_action(page, server, provider: FakeProvider) -> None:
    at = await centres(page, server)
    x, y = at["target"]
    provider.reply(openai_response(computer_call=("call_1", {"type": "click", "button": "left", "x": x, "y": y}),
                                   safety_checks=[{"id": "sc_9", "code": "sensitive_domain", "message": "A payment page."}]))
    client = LLMClient("openai/computer-use-preview", api_key="sk-test", base_url=f"{provider.url}/v1", retry_policy=FAST)
    agent = Stagehand(page, model=client).agent(mode="cua", on_safety_check=lambda c: False)
    result = await agent.execute("Pay", max_steps=5)
    assert result.status == "needs_review" and "A payment page." in result.message
    assert await page.locator("#log li").count() == 0 and len(provider.seen) == 1


async def test_the_model_giving_up_and_a_chat_model_staying_on_the_internal_protocol(page, server, provider: FakeProvider) -> None:
    await centres(page, server)
    provider.reply(anthropic_message(text="FAILED: there is no such button."))
    client = LLMClient("anthropic/claude-test-model", api_key="sk-ant-test", base_url=provider.url, retry_policy=FAST)
    result = await Stagehand(page, model=client).agent(mode="cua").execute("Press Launch", max_steps=3)
    assert result.status == "failed" and result.message == "there is no such button."

    from stagehand_py.agent.modes.cua._native import native_provider

    assert native_provider(client) == "anthropic"
    chat = LLMClient("openai/gpt-4.1-mini", api_key="sk-test", base_url=f"{provider.url}/v1")
    assert native_provider(chat) is None  # chat models cannot take computer_use_preview
    assert native_provider(LLMClient("openai/computer-use-preview", api_key="sk-test")) == "openai"
