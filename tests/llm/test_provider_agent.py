"""The agent on a real page through each native provider's SDK (Gemini, Azure OpenAI), on both
page kinds: the loopback server scripts the agent's steps in the provider's wire format, the
agent acts on the page, and the bytes sent show the step schema and the outcome going back."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from stagehand_py import Stagehand
from stagehand_py.llm import LLMClient, RetryPolicy

from ._fake_provider import FakeProvider, chat_completion, gemini_response

FAST = RetryPolicy(max_retries=1, initial_backoff=0.001, max_backoff=0.002, jitter=0)


def step(tool: str, args: dict[str, Any], goal: str) -> str:
    return json.dumps({"evaluation_previous_step": "ok", "memory": "", "next_goal": goal,
                       "action": {"tool": tool, "args": args}})


PROVIDERS: dict[str, Any] = {
    "google": {
        "client": lambda fake: LLMClient("google/gemini-2.5-flash", api_key="k", base_url=fake.url, retry_policy=FAST),
        "answer": lambda text, tokens: gemini_response(text, prompt_tokens=tokens, output_tokens=40),
        "path": "/v1beta/models/gemini-2.5-flash:generateContent",
        "schema": lambda body: body["generationConfig"]["responseJsonSchema"],
        "history": lambda body: body["contents"],
    },
    "azure": {
        "client": lambda fake: LLMClient("azure/gpt-4o", api_key="k", base_url=fake.url, api_version="2024-10-21",
                                         retry_policy=FAST),
        "answer": lambda text, tokens: chat_completion(text, prompt_tokens=tokens, completion_tokens=40),
        "path": "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
        "schema": lambda body: body["response_format"]["json_schema"]["schema"],
        "history": lambda body: body["messages"],
    },
}


@pytest.mark.parametrize("kind", ["wrapped", "launched"])
@pytest.mark.parametrize("provider", sorted(PROVIDERS))
async def test_the_agent_fills_a_field(provider: str, kind: str, page: Any, server: Any, fake: FakeProvider) -> None:
    wire = PROVIDERS[provider]
    client = wire["client"](fake)
    sh = Stagehand(page, model=client) if kind == "wrapped" else await Stagehand.launch(model=client)
    try:
        await sh.page.goto(server.url("forms.html"))
        username = re.search(r"\[(\d+-\d+)\] textbox: Username", (await sh.snapshot()).tree)
        assert username is not None  # ids hold across snapshots: the agent's outline has the same one
        typed = f"ada-{provider}"
        fake.reply(wire["answer"](step("act", {"element_id": username.group(1), "method": "fill", "arguments": [typed]},
                                       "fill the user name"), 3000))
        fake.reply(wire["answer"](step("done", {"message": "filled"}, "finish"), 3200))
        # The verdict on the final page (self_check), in the provider's format too.
        fake.reply(wire["answer"](json.dumps({"evidence": "(no line of the page shows it)", "verdict": "yes"}), 800))
        result = await sh.agent().execute(f"Type {typed} as the user name", max_steps=4)
        assert result.status == "done" and result.success, result.message
        assert await sh.page.locator("#username").input_value() == typed  # the page really changed
        assert [s.path for s in fake.seen] == [wire["path"]] * 3
        assert result.checks[-1].check == "verdict" and result.checks[-1].passed
        # The step answer is a union of tool calls tagged by "tool": sent as the provider takes it.
        schema = json.dumps(wire["schema"](fake.seen[0].body))
        assert '"act"' in schema and '"done"' in schema
        if provider == "google":
            assert '"const"' not in schema and '"$ref"' not in schema  # adapted to Gemini's subset
        # The second step's page shows what step 1 typed (the first did not): the outcome went back.
        shown = f'value=\\"{typed}\\"'
        assert shown in json.dumps(wire["history"](fake.seen[1].body))
        assert shown not in json.dumps(wire["history"](fake.seen[0].body))
        assert result.usage.input_tokens == 7000 and result.usage.cost_usd is not None and result.usage.cost_usd > 0
    finally:
        if kind == "launched":
            await sh.close()
