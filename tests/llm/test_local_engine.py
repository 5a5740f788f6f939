"""The embedded engine for real: xllamacpp running the pinned Qwen2.5-Coder-1.5B on this CPU.

Short prompts keep each call to a second or two. What is checked: schema-constrained JSON and
usage, one engine shared by every model object, thread and event loop, the prompt cache reused
across calls, cancellation that frees the slot, a context overflow as a typed error, the HTTP
side xllamacpp always opens (loopback only, refused without the key), which also serves as a real
llama.cpp server for the OpenAI-compatible path, and the fixed prompt's cache saved beside the
model (restored by the next engine, never holding page text or a value).
"""

from __future__ import annotations

import asyncio
import json
import struct
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel

from stagehand_py import BadRequestError, ConfigurationError
from stagehand_py.llm import LLMClient, LocalModel, Profile, SystemMessage, UserMessage
from stagehand_py.llm._providers import _local
from stagehand_py.llm._providers._local_prefix import cache_folder

from ._local_model import require_local_model

MODEL = require_local_model()
pytestmark = pytest.mark.real_model

VERDICT = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
           "required": ["answer"], "additionalProperties": False}


class Book(BaseModel):
    title: str
    year: int


@pytest.fixture(scope="module")
async def model() -> AsyncIterator[LocalModel]:
    """One engine for the file (loaded once, seconds on two cores); the last test frees it and loads another."""
    m = LocalModel(MODEL, n_ctx=2048, n_threads=2)
    yield m
    await m.aclose()


#: A page's outline for the prompt-cache tests (one text: a prefix a later test finds cached costs nothing).
OUTLINE = "Page outline:\n" + "\n".join(f"[0-{i}] link: Book {i}" for i in range(40))


async def test_grammar_constrained_json_usage_and_the_prompt_cache(model: LocalModel) -> None:
    client = LLMClient(model)
    messages = [SystemMessage("Extract the book as JSON."), UserMessage("Dune, by Frank Herbert, 1965.")]
    first = await client.generate(messages, output=Book)
    assert first.output == Book(title="Dune", year=1965)
    assert first.usage.input_tokens > 10 and first.usage.output_tokens > 3
    engine = model._engine
    assert engine is not None
    # The same prefix again: llama.cpp reuses the cached prompt (cache_n > 0 in its timings).
    chunks = await asyncio.to_thread(model._generate, model.build_params(
        _request(messages, Book.model_json_schema())), threading.Event())
    timings = next(c["timings"] for c in reversed(chunks) if "timings" in c)
    assert timings["cache_n"] > 10, timings


async def test_the_second_call_on_a_shared_prefix_reports_cached_tokens(model: LocalModel) -> None:
    client = LLMClient(model)
    system = SystemMessage("You read web pages.")
    first = await client.generate([system, UserMessage(f"{OUTLINE}\n\nInstruction: is Book 7 listed?")], output=VERDICT)
    second = await client.generate([system, UserMessage(f"{OUTLINE}\n\nInstruction: is Book 70 listed?")], output=VERDICT)
    assert first.usage.cached_tokens < first.usage.input_tokens
    # Everything up to the instruction came from the slot's cache: only the new tail was computed.
    assert second.usage.cached_tokens > 0.8 * second.usage.input_tokens, second.usage


async def test_a_prompt_evicted_by_another_comes_back_from_the_ram_cache(model: LocalModel) -> None:
    """One slot: an agent step (another system prompt) between two verbs on one page replaces the
    slot's prefix; llama.cpp's host-memory prompt cache brings the page's prefix back."""
    client = LLMClient(model)
    verbs = SystemMessage("You read web pages.")
    await client.generate([verbs, UserMessage(f"{OUTLINE}\n\nInstruction: is Book 8 listed?")], output=VERDICT)
    agent = SystemMessage("You are an agent. " + " ".join(f"Rule {i}: be brief." for i in range(30)))
    await client.generate([agent, UserMessage("Step 1: is the task done?")], output=VERDICT)
    back = await client.generate([verbs, UserMessage(f"{OUTLINE}\n\nInstruction: is Book 80 listed?")], output=VERDICT)
    assert back.usage.cached_tokens > 0.8 * back.usage.input_tokens, back.usage


def _request(messages: list[Any], schema: dict[str, Any] | None) -> Any:
    from stagehand_py.llm._request import LLMRequest

    return LLMRequest(messages=tuple(messages), output_schema=schema)


async def test_one_engine_for_every_model_object_thread_and_loop(model: LocalModel) -> None:
    other = LocalModel(MODEL, n_ctx=2048, n_threads=2)
    question = [UserMessage("Is water wet? Answer yes or no.")]
    answers: list[Any] = []

    def in_another_loop() -> None:
        answers.append(asyncio.run(LLMClient(other).generate(question, output=VERDICT)).output)

    thread = threading.Thread(target=in_another_loop)
    thread.start()
    here = await LLMClient(model).generate(question, output=VERDICT)
    await asyncio.to_thread(thread.join, 120)
    assert here.output in ({"answer": "yes"}, {"answer": "no"}) and answers and answers[0] in (
        {"answer": "yes"}, {"answer": "no"})
    assert model._engine is other._engine and model._engine is not None  # loaded once
    assert model._engine.users == 2
    await other.aclose()
    assert model._engine.users == 1 and model._engine.server is not None  # still held by `model`


def _slot(model: LocalModel) -> dict[str, Any]:
    """The engine's one slot, as llama.cpp reports it (``/slots``)."""
    engine = model._engine
    assert engine is not None
    request = urllib.request.Request(f"{engine.server.listening_address}/slots",
                                     headers={"Authorization": f"Bearer {engine.api_key}"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        slots: list[dict[str, Any]] = json.loads(answer.read())
    return slots[0]


async def _decoded_until_idle(model: LocalModel, *, past: int | None = None) -> int:
    """The most tokens the slot's task was seen to have decoded, polled until the slot is idle
    (llama.cpp resets the count when a task ends), or until it is seen past ``past``."""
    most = 0
    for _ in range(3000):  # a guard against a hung engine only, not a time the test expects
        slot = await asyncio.to_thread(_slot, model)
        token = slot["next_token"][0] if isinstance(slot["next_token"], list) else slot["next_token"]
        if not slot["is_processing"]:
            return most
        most = max(most, int(token["n_decoded"]))
        if past is not None and most > past:
            return most
        await asyncio.sleep(0.1)
    raise AssertionError("the slot never became idle")


async def test_a_cancelled_generation_stops_and_frees_the_slot(model: LocalModel) -> None:
    # Counted in tokens, not seconds (a loaded machine stretches any time): after the caller gives
    # up at 3 s, the slot is seen decoding no further than about what it had then (a few dozen
    # tokens at ~20 a second here; fewer on a loaded machine), not on to its 300, and it is free for
    # the next call. The control (the same answer left to run) is seen past 200.
    client = LLMClient(model, max_output_tokens=300)
    prompt = [UserMessage("Count from 1 to 300, one number per line.")]
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(client.generate(prompt), timeout=3)
    assert await _decoded_until_idle(model) < 200
    quick = await LLMClient(model).generate([UserMessage("Say yes.")], output=VERDICT)
    assert quick.output in ({"answer": "yes"}, {"answer": "no"})
    left = asyncio.ensure_future(client.generate(prompt))
    while not (await asyncio.to_thread(_slot, model))["is_processing"]:
        assert not left.done(), "the control's answer ended before the slot was seen busy"
        await asyncio.sleep(0.05)
    assert await _decoded_until_idle(model, past=200) > 200
    left.cancel()  # the control has shown what it had to: no need to wait for its last 100 tokens
    with pytest.raises(asyncio.CancelledError):
        await left


async def test_a_prompt_over_the_context_is_a_bad_request_naming_the_fix(model: LocalModel) -> None:
    with pytest.raises(BadRequestError, match=r"exceeds the available context size.*LocalModel\(n_ctx=...\)"):
        await LLMClient(model).generate([UserMessage("word " * 3000)], output=VERDICT)


async def test_the_http_side_is_loopback_only_keyed_and_a_real_openai_compatible_server(model: LocalModel) -> None:
    await LLMClient(model).generate([UserMessage("Say yes.")], output=VERDICT)  # loads the engine
    engine = model._engine
    assert engine is not None
    address: str = engine.server.listening_address
    assert address.startswith("http://127.0.0.1:")
    listening = subprocess.run(["ss", "-ltn"], capture_output=True, text=True).stdout
    port = address.rsplit(":", 1)[1]
    assert f"127.0.0.1:{port}" in listening and f"0.0.0.0:{port}" not in listening
    request = urllib.request.Request(f"{address}/v1/chat/completions", method="POST",
                                     data=json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode(),
                                     headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        await asyncio.to_thread(urllib.request.urlopen, request, timeout=30)
    assert refused.value.code == 401
    # With the key, the same port is a llama.cpp server: the OpenAI-compatible configuration works.
    server_client = LLMClient("openai/qwen", base_url=f"{address}/v1", api_key=engine.api_key,
                              profile=Profile(output_mode="json_schema", supports_images=False, max_output_tokens=64))
    answer = await server_client.generate([UserMessage("Is fire hot? yes or no.")], output=VERDICT)
    assert answer.output in ({"answer": "yes"}, {"answer": "no"})


async def test_release_frees_every_engine(model: LocalModel) -> None:
    await LLMClient(model).generate([UserMessage("Say yes.")], output=VERDICT)
    engine = model._engine
    assert engine is not None and engine.server is not None
    _local.release_local_models()
    assert engine.server is None and not _local._ENGINES
    again = await LLMClient(model).generate([UserMessage("Say no.")], output=VERDICT)  # loads a new engine
    assert again.output in ({"answer": "yes"}, {"answer": "no"}) and model._engine is not engine


# --- the fixed prompt's cache, saved beside the model ------------------------------------------------

#: Fixed instructions, as a Stagehand passes its verbs' system prompt (shorter: the mechanism is the same).
FIXED = "You read web pages for a program and answer in JSON. " + " ".join(f"Rule {i}: be exact." for i in range(12))
CANARY_PAGE = "Quokkafjord-canary-7f3a"  # page text
CANARY_VALUE = "hunter2-zebra-9b1c"  # a variable's value


def _post(engine: Any, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(f"{engine.server.listening_address}{path}", method="POST",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {engine.api_key}"})
    with urllib.request.urlopen(request, timeout=120) as answer:
        result: dict[str, Any] = json.loads(answer.read())
        return result


def _holds(data: bytes, engine: Any, text: str) -> bool:
    """Whether ``data`` holds ``text`` as written or as the token ids a slot file stores (int32)."""
    ids = _post(engine, "/tokenize", {"content": f" {text}", "add_special": False})["tokens"][1:]
    return text.encode() in data or struct.pack(f"<{len(ids)}i", *ids) in data


async def test_the_fixed_prompt_is_saved_beside_the_model_restored_by_the_next_engine_and_holds_no_page(
        tmp_path: Any) -> None:
    link = tmp_path / MODEL.name  # a models folder of the test's own: the cache goes beside the file
    link.symlink_to(MODEL)
    question = [SystemMessage(FIXED), UserMessage(f"Page: {CANARY_PAGE}. Typed: {CANARY_VALUE}. Is the page empty?")]
    first = LocalModel(link, n_ctx=1024, n_threads=2)  # its own engine (the module's has n_ctx=2048)
    first.start_loading(fixed_prompt=FIXED)
    load = await first.ready()
    assert load.prompt_cache in ("computing", "saved") and load.seconds > 0
    answered = await LLMClient(first).generate(question, output=VERDICT)
    saved = await first.ready()
    assert saved.prompt_cache == "saved" and saved.cached_tokens > 20
    assert answered.usage.cached_tokens >= saved.cached_tokens  # the call reused the warm-up
    files = list(cache_folder(link).glob("prefix-*.bin"))
    assert len(files) == 1, files
    engine = first._engine
    assert engine is not None
    # The page and the value the call carried are in the slot, never in the saved file ...
    for canary in (CANARY_PAGE, CANARY_VALUE):
        assert not _holds(files[0].read_bytes(), engine, canary)
    # ... the control: the same slot saved now (after the call) holds both.
    _post(engine, "/slots/0?action=save", {"filename": "control.bin"})
    control = (cache_folder(link) / "control.bin").read_bytes()
    assert _holds(control, engine, CANARY_PAGE) and _holds(control, engine, CANARY_VALUE)
    await first.aclose()
    assert first._engine is None and not any(key[0] == str(MODEL.resolve()) and key[1].n_ctx == 1024
                                             for key in _local._ENGINES)

    # A new engine (as in the next process): the prefix is restored, not computed, and the call
    # gives the same answer, paying only for what is new.
    second = LocalModel(link, n_ctx=1024, n_threads=2)
    second.start_loading(fixed_prompt=FIXED)
    restored = await second.ready()
    assert (restored.prompt_cache, restored.cached_tokens) == ("restored", saved.cached_tokens)
    again = await LLMClient(second).generate(question, output=VERDICT)
    assert again.output == answered.output
    assert again.usage.cached_tokens >= saved.cached_tokens
    await second.aclose()


async def test_a_load_that_fails_in_the_background_is_raised_by_the_first_call(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 64)
    loads: list[Any] = []
    real_load = _local._load
    monkeypatch.setattr(_local, "_load", lambda *a: loads.append(a) or real_load(*a))
    model = LocalModel(broken, n_ctx=1024)
    model.start_loading(fixed_prompt=FIXED)
    with pytest.raises(ConfigurationError, match="could not be loaded"):
        await LLMClient(model).generate([UserMessage("hi")], output=VERDICT)
    assert len(loads) == 1  # the background load's own error, not a second attempt by the call
    with pytest.raises(ConfigurationError, match="could not be loaded"):  # the next call tries again
        await model.ready()
    assert len(loads) == 2
