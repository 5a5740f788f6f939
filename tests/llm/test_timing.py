"""Time that fits the model: bounds from the profile, cancellation before a retry, clear errors.

The server here is a real single-slot HTTP server on 127.0.0.1 (asyncio sockets): it "computes"
for a set time per request and records when a client closes a connection before the answer,
which is how llama.cpp's server learns to abort a slot.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from pydantic import BaseModel

from stagehand_py import ProviderConnectionError
from stagehand_py.llm import LOCAL_TIMING, LLMClient, Profile, RetryPolicy, Timing, UserMessage, default_profile
from stagehand_py.llm._providers._local import LocalModel

from ._fake_provider import chat_completion


class Verdict(BaseModel):
    answer: str


@dataclass
class SlotEvent:
    number: int
    arrived: float
    aborted: float | None = None  # when the client closed the connection before the answer
    answered: float | None = None


@dataclass
class SingleSlotServer:
    """Answers each request after ``compute[i]`` seconds (the last value repeats), one at a time."""

    compute: list[float]
    events: list[SlotEvent] = field(default_factory=list)
    slot: asyncio.Lock = field(default_factory=asyncio.Lock)
    url: str = ""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                await reader.readexactly(length)
                event = SlotEvent(number=len(self.events) + 1, arrived=time.monotonic())
                self.events.append(event)
                async with self.slot:
                    seconds = self.compute[min(event.number, len(self.compute)) - 1]
                    try:  # "compute", watching the socket: EOF means the client gave up
                        closed = await asyncio.wait_for(reader.read(1), timeout=seconds)
                    except TimeoutError:
                        closed = None
                    if closed == b"":
                        event.aborted = time.monotonic()
                        return
                body = json.dumps(chat_completion('{"answer": "yes"}', prompt_tokens=9, completion_tokens=3)).encode()
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                             + str(len(body)).encode() + b"\r\n\r\n" + body)
                await writer.drain()
                event.answered = time.monotonic()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            return  # the client went away, or the test ended with a kept-alive connection
        finally:
            writer.close()


@pytest.fixture
async def slot_server(request: pytest.FixtureRequest) -> AsyncIterator[SingleSlotServer]:
    server = SingleSlotServer(compute=list(getattr(request, "param", [0.0])))
    listening = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    server.url = f"http://127.0.0.1:{port}/v1"
    async with listening:
        yield server
        listening.close()


def loopback_client(server: SingleSlotServer, **kw: object) -> LLMClient:
    return LLMClient("openai/qwen2.5-coder-1.5b", base_url=server.url, output_mode="json_schema", **kw)  # type: ignore[arg-type]


# -- the bound ------------------------------------------------------------------------------


def test_the_bound_scales_with_the_prompt_for_local_models_and_stays_fixed_for_hosted_ones() -> None:
    hosted = default_profile("openai", "gpt-4.1-mini", base_url=None).timing
    assert hosted.seconds_for(input_tokens=100, max_output_tokens=500) == 60
    assert hosted.seconds_for(input_tokens=50_000, max_output_tokens=500) == 60
    local = default_profile("local", "qwen.gguf", base_url=None).timing
    assert local == LOCAL_TIMING and local.single_slot
    small, large = (local.seconds_for(input_tokens=n, max_output_tokens=200) for n in (1_000, 5_000))
    assert large - small == pytest.approx(4_000 / local.prompt_tokens_per_second)  # type: ignore[operator]
    assert large > 300  # a 5,000-token prompt on a loaded 2-core CPU is not "hung" at 60 s
    # A server on this machine is most likely a CPU model; one elsewhere is not.
    for url in ("http://127.0.0.1:8080/v1", "http://localhost:11434/v1", "http://[::1]:8000/v1"):
        assert default_profile("openai", "m", base_url=url).timing == LOCAL_TIMING, url
    assert default_profile("openai", "m", base_url="https://llm.example.com/v1").timing == Timing()


@pytest.mark.parametrize("slot_server", [[0.6]], indirect=True)
async def test_a_long_prompt_gets_the_time_its_size_needs(slot_server: SingleSlotServer) -> None:
    # 0.3 s base + 1,000 prompt tokens a second: a short prompt gets ~0.3 s, an 8,000-token one ~8 s.
    timing = Timing(base_seconds=0.3, prompt_tokens_per_second=1_000, single_slot=True, max_retries=0)
    client = loopback_client(slot_server, profile=Profile(output_mode="json_schema", timing=timing))
    with pytest.raises(ProviderConnectionError):  # the control: the same 0.6 s answer, a short prompt
        await client.generate([UserMessage("Say yes.")], output=Verdict)
    result = await client.generate([UserMessage("word " * 8_000 + "Say yes.")], output=Verdict)
    assert result.output.answer == "yes"


@pytest.mark.parametrize("slot_server", [[5.0, 0.0]], indirect=True)
async def test_a_timed_out_request_is_cancelled_before_the_retry_reaches_the_slot(slot_server: SingleSlotServer) -> None:
    client = loopback_client(slot_server, timeout=0.4, retry_policy=RetryPolicy(max_retries=1, initial_backoff=0, jitter=0))
    result = await client.generate([UserMessage("Say yes.")], output=Verdict)
    assert result.output.answer == "yes"
    first, second = slot_server.events
    assert first.aborted is not None, "the timed-out request's connection stayed open: the slot kept computing"
    assert first.answered is None and first.aborted <= second.arrived
    assert second.answered is not None
    assert second.answered - first.arrived < 3  # it did not wait out the first request's 5 s


@pytest.mark.parametrize("slot_server", [[5.0, 0.0]], indirect=True)
async def test_the_recorder_sees_a_request_left_running(slot_server: SingleSlotServer) -> None:
    """Control for the test above: a client that opens a second connection while the first is
    still open is recorded as such (no abort before the second request arrived)."""
    async def post(reader_writer: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> None:
        _, writer = reader_writer
        body = b'{"messages": []}'
        writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: "
                     + str(len(body)).encode() + b"\r\n\r\n" + body)
        await writer.drain()

    host, port = slot_server.url.removeprefix("http://").removesuffix("/v1").split(":")
    first = await asyncio.open_connection(host, int(port))
    await post(first)
    await asyncio.sleep(0.2)
    second = await asyncio.open_connection(host, int(port))
    await post(second)
    await asyncio.sleep(0.2)
    one, two = slot_server.events
    assert one.aborted is None and two.answered is None  # the second queues behind the first
    first[1].close()
    await asyncio.sleep(0.2)
    assert one.aborted is not None and one.aborted > two.arrived
    second[1].close()


@pytest.mark.parametrize("slot_server", [[5.0]], indirect=True)
async def test_the_timeout_error_says_what_took_how_long_and_what_to_change(slot_server: SingleSlotServer) -> None:
    timing = Timing(base_seconds=0.3, prompt_tokens_per_second=50_000, single_slot=True, max_retries=0)
    client = loopback_client(slot_server, profile=Profile(output_mode="json_schema", timing=timing))
    with pytest.raises(ProviderConnectionError) as info:
        await client.generate([UserMessage("word " * 400)], output=Verdict)
    message = str(info.value)
    assert "timed out: no answer within 0.3" in message
    assert re.search(r"to a prompt of about \d{3} tokens", message)  # 400 words, the schema
    assert "the model's profile: 0.3 s + the prompt at 50000 tokens/s" in message
    assert "timeout=" in message and "token_budget" in message and "cancelled" in message


@pytest.mark.parametrize("slot_server", [[5.0]], indirect=True)
async def test_a_local_server_is_retried_once_by_default(slot_server: SingleSlotServer) -> None:
    timing = LOCAL_TIMING.model_copy(update={"base_seconds": 0.2, "prompt_tokens_per_second": None,
                                             "output_tokens_per_second": None})
    client = loopback_client(slot_server, profile=Profile(output_mode="json_schema", timing=timing))
    with pytest.raises(ProviderConnectionError):
        await client.generate([UserMessage("Say yes.")], output=Verdict)
    await asyncio.sleep(0.2)  # let the server notice the last close
    assert len(slot_server.events) == 2 and all(e.aborted is not None for e in slot_server.events)
    # Hosted profiles keep three retries; an explicit max_retries= wins over the profile.
    assert LLMClient("openai/gpt-4.1-mini", api_key="k")._retry.max_retries == 3
    assert loopback_client(slot_server, max_retries=0)._retry.max_retries == 0


# -- the in-process model -------------------------------------------------------------------


async def test_in_process_time_counts_from_when_the_engine_takes_the_request() -> None:
    """Queued behind another request is not hung; running past the bound is."""
    def worker(queued: float, runs: float, began: threading.Event) -> str:
        time.sleep(queued)
        began.set()
        time.sleep(runs)
        return "done"

    began = threading.Event()
    work = asyncio.ensure_future(asyncio.to_thread(worker, 0.6, 0.1, began))
    await LocalModel._wait_within(work, began, bound=0.3)  # 0.7 s in all, 0.1 s of it running
    began = threading.Event()
    work = asyncio.ensure_future(asyncio.to_thread(worker, 0.0, 0.8, began))
    with pytest.raises(TimeoutError):
        await LocalModel._wait_within(work, began, bound=0.3)
    await work


def test_local_model_takes_a_timeout_and_rejects_a_bad_one(tmp_path: object) -> None:
    from pathlib import Path

    gguf = Path(str(tmp_path)) / "m.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 16)
    assert LocalModel(gguf, timeout=12.5)._timeout == 12.5
    from stagehand_py import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="timeout must be a positive number"):
        LocalModel(gguf, timeout=0)
