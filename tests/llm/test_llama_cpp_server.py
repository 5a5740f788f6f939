"""The wire protocol of a real ``llama_cpp.server`` on 127.0.0.1 with SmolLM2-135M, through the
real openai SDK and our client: JSON validity under a schema, json_object vs json_schema,
streaming, tool calls, errors. Answer quality is not asserted (a 135M model). Skips without
llama-cpp-python[server] or the model file (see tests/llm/_llama.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

import jsonschema
import openai
import pytest

from ._llama import require_llama

MODEL = require_llama(server=True)

from stagehand_py import BadRequestError, ServerError  # noqa: E402
from stagehand_py._prompts.choice import choice_schema  # noqa: E402
from stagehand_py.llm import LLMClient, Profile, RetryPolicy, SystemMessage, UserMessage, llama_cpp_server_profile  # noqa: E402

NO_RETRY = RetryPolicy(max_retries=0)
N_CTX = 1024
#: A schema whose every answer is short: enums and a boolean only, so the grammar always ends.
VERDICT = {
    "type": "object",
    "properties": {
        "colour": {"type": "string", "enum": ["red", "green", "blue"]},
        "certain": {"type": "boolean"},
    },
    "required": ["colour", "certain"],
    "additionalProperties": False,
}
MESSAGES = [SystemMessage("Answer in JSON."), UserMessage("What colour is grass? Are you certain?")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    port = _free_port()
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(MODEL), "--host", "127.0.0.1", "--port", str(port),
         "--n_ctx", str(N_CTX), "--logits_all", "False", "--n_threads", "1", "--verbose", "False"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                err = process.stderr.read().decode(errors="replace")[-2000:] if process.stderr else ""
                pytest.fail(f"llama_cpp.server did not start (exit {process.poll()}):\n{err}")
            time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _client(url: str, **kw: object) -> LLMClient:
    kw.setdefault("retry_policy", NO_RETRY)
    kw.setdefault("max_output_tokens", 64)
    return LLMClient("openai/smollm2", base_url=url, **kw)  # type: ignore[arg-type]


async def test_json_object_with_schema_gives_valid_json(server_url: str) -> None:
    client = _client(server_url, profile=llama_cpp_server_profile())
    result = await client.generate(MESSAGES, output=VERDICT, max_reasks=0)
    jsonschema.validate(result.output, VERDICT)
    assert json.loads(result.raw) == result.output  # the text itself is the JSON, no prose around it
    assert result.attempts == 1 and result.usage.input_tokens > 0 and result.usage.output_tokens > 0


async def test_choice_schema_is_enforced_by_the_grammar(server_url: str) -> None:
    choices = ["textbox: Username [0-3]", "textbox: Password [0-4]", "button: Sign in [0-16]"]
    schema = choice_schema(choices, single=True, opens_options=True)
    client = _client(server_url, profile=llama_cpp_server_profile(), max_output_tokens=96)
    result = await client.generate([SystemMessage("Pick the element."), UserMessage("Click sign in. Choices:\n" +
                                                                                   "\n".join(choices))],
                                   output=schema, max_reasks=0)
    jsonschema.validate(result.output, schema)
    assert all(e["element"] in choices for e in result.output["elements"])


async def test_openai_json_schema_form_is_a_server_error(server_url: str) -> None:
    """What the default profile sends: llama_cpp.server answers HTTP 500 (hence the profile option)."""
    client = _client(server_url, profile=Profile(output_mode="json_schema"))
    with pytest.raises(ServerError, match="HTTP 500") as info:
        await client.generate(MESSAGES, output=VERDICT)
    assert info.value.status == 500 and isinstance(info.value.__cause__, openai.InternalServerError)


async def test_streaming_json_object_joins_to_valid_json(server_url: str) -> None:
    sdk = openai.AsyncOpenAI(base_url=server_url, api_key="not-needed", max_retries=0)
    try:
        stream = await sdk.chat.completions.create(
            model="smollm2", messages=[{"role": "user", "content": "What colour is grass?"}], max_tokens=64,
            temperature=0, stream=True, response_format={"type": "json_object", "schema": VERDICT},  # type: ignore[typeddict-item]
        )
        pieces = [chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices]
    finally:
        await sdk.close()
    assert len([p for p in pieces if p]) > 1  # really streamed, token by token
    jsonschema.validate(json.loads("".join(pieces)), VERDICT)


async def test_forced_tool_call_carries_schema_valid_arguments(server_url: str) -> None:
    client = _client(server_url, profile=Profile(output_mode="tools", supports_images=False))
    result = await client.generate(MESSAGES, output=VERDICT, max_reasks=0)
    jsonschema.validate(result.output, VERDICT)


async def test_a_prompt_longer_than_the_context_is_a_bad_request(server_url: str) -> None:
    client = _client(server_url, profile=llama_cpp_server_profile())
    long = UserMessage("word " * (N_CTX * 2))
    with pytest.raises(BadRequestError, match="HTTP 400.*context") as info:
        await client.generate([long], output=VERDICT)
    assert info.value.status == 400 and client.metrics.retries == 0
