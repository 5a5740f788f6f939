"""The annotated screenshot reaches the wire: OpenAI and Anthropic request bodies, through the
real SDKs, against the LLM layer's loopback server."""

from __future__ import annotations

import base64
import io
import json

from llm._fake_provider import anthropic_message, chat_completion
from PIL import Image

from stagehand_py._stagehand import Stagehand
from stagehand_py.llm import LLMClient, RetryPolicy

NOTHING = {"elements": [], "opens_options": False}
FAST = RetryPolicy(max_retries=0)


def _decoded(data: str, media_type: str) -> Image.Image:
    image = Image.open(io.BytesIO(base64.b64decode(data)))
    assert image.format == media_type.split("/")[1].upper()
    return image


async def test_openai_request_carries_the_annotated_screenshot(page, server, fake) -> None:
    await page.goto(server.url("vision/toolbar.html"))
    fake.reply(chat_completion(json.dumps(NOTHING)))
    client = LLMClient("openai/gpt-4.1-mini", api_key="sk-test", base_url=f"{fake.url}/v1", output_mode="json_schema",
                       retry_policy=FAST)
    result = await Stagehand(page, model=client).act("click the save icon")  # low confidence: screenshot first
    assert not result.success
    (seen,) = fake.seen
    user = seen.body["messages"][1]
    assert user["role"] == "user" and user["content"][0]["type"] == "text"
    assert "Screenshot legend" in user["content"][0]["text"]
    (image,) = [p for p in user["content"] if p["type"] == "image_url"]
    media_type, _, data = image["image_url"]["url"].removeprefix("data:").partition(";base64,")
    assert _decoded(data, media_type).size == (1280, 720)


async def test_anthropic_request_carries_the_annotated_screenshot(page, server, fake) -> None:
    await page.goto(server.url("forms.html"))
    fake.reply(anthropic_message(tool_use=("act_answer", NOTHING)))
    client = LLMClient("anthropic/claude-test-model", api_key="sk-ant-test", base_url=fake.url, retry_policy=FAST)
    await Stagehand(page, model=client).act("press the red button", vision=True)
    (seen,) = fake.seen
    content = seen.body["messages"][0]["content"]
    (image,) = [p for p in content if p["type"] == "image"]
    assert image["source"]["type"] == "base64"
    assert _decoded(image["source"]["data"], image["source"]["media_type"]).size == (1280, 720)
    assert "never with a box number" in json.dumps(seen.body["system"])
