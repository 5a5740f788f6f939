"""The in-process provider on real llama.cpp with SmolLM2-135M: grammar-constrained JSON, the
choice schema through observe() on a real page, usage, cancellation. Answer quality is not
asserted. Skips without llama-cpp-python or the model file (see tests/llm/_llama.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time

import jsonschema
import pytest

from ._llama import require_llama

MODEL = require_llama()

from stagehand_py import OutputValidationError, Stagehand  # noqa: E402
from stagehand_py.llm import LLMClient, LocalModel, SystemMessage, UserMessage  # noqa: E402
from stagehand_py.testing import capture_requests  # noqa: E402

VERDICT = {
    "type": "object",
    "properties": {"colour": {"type": "string", "enum": ["red", "green", "blue"]}, "certain": {"type": "boolean"}},
    "required": ["colour", "certain"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def model() -> LocalModel:
    return LocalModel(MODEL, n_ctx=4096, n_threads=1)


async def test_grammar_constrained_json_and_usage(model: LocalModel) -> None:
    client = LLMClient(model, max_output_tokens=64)
    result = await client.generate([SystemMessage("Answer in JSON."), UserMessage("What colour is grass?")],
                                   output=VERDICT, max_reasks=0)
    jsonschema.validate(result.output, VERDICT)
    assert json.loads(result.raw) == result.output
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0
    assert os.environ.get("OMP_WAIT_POLICY")  # set before llama.cpp was loaded, unless the user had set it


async def test_observe_in_choice_mode_gets_schema_valid_answers(model: LocalModel, page, server) -> None:
    await page.goto(server.url("forms.html"))
    client = LLMClient(model, max_output_tokens=512)
    assert client.choice_mode  # the default for local models
    sh = Stagehand(page, model=client, token_budget=3000)
    with capture_requests() as calls, contextlib.suppress(OutputValidationError):
        await sh.observe("click the sign in button")  # a 135M model may pick badly: re-asks, then an error
    assert calls
    for call in calls:
        answer = json.loads(call.response.text)
        jsonschema.validate(answer, call.request.output_schema)  # the grammar held, whatever it chose
        assert "enum" in json.dumps(call.request.output_schema)


async def test_a_cancelled_generation_frees_the_model(model: LocalModel) -> None:
    client = LLMClient(model, max_output_tokens=2000)
    essay = [UserMessage("Write a very long story about a web browser, at least two thousand words.")]
    with pytest.raises(asyncio.TimeoutError):  # still generating after a second
        await asyncio.wait_for(client.generate(essay), timeout=1.0)
    # The worker stops at its next token and lets go of the model (an essay would take far longer).
    started = time.perf_counter()
    assert await asyncio.to_thread(model._lock.acquire, True, 3)
    model._lock.release()
    assert time.perf_counter() - started < 3
