"""What the real-SDK tests (test_sdk_*.py, test_cassettes.py) share: quick retries, the answer
model, a loopback address nobody listens on, and the transport cases every provider must pass
the same way (a timed-out answer, a refused connection, a body that is not JSON).

A case takes the test's own client and the provider's answer builder (``chat_completion``,
``gemini_response``, ...) from _fake_provider, and returns what the provider-specific assertions
need (the error, the client), so each test file still checks its SDK's own exception types.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from stagehand_py import ProviderConnectionError
from stagehand_py.llm import LLMClient, RetryPolicy

from ._fake_provider import FakeProvider

FAST = RetryPolicy(max_retries=2, initial_backoff=0.001, max_backoff=0.002, jitter=0)
ONE_RETRY = RetryPolicy(max_retries=1, initial_backoff=0.001, jitter=0)
# Longer than the clients' timeout below, so each delayed answer times out.
SLOW_ANSWER = 0.6
TIMEOUT = 0.15

Answer = Callable[[str], Any]
"""A provider's answer body carrying the given text as the model's output."""


class Book(BaseModel):
    title: str
    year: int


def dead_url() -> str:
    """A loopback URL whose port was free a moment ago: connecting to it is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


async def a_timeout_then_an_answer(fake: FakeProvider, client: Callable[..., LLMClient], answer: Answer) -> Book:
    """The first answer comes after the timeout, the retry's at once: the retry's answer."""
    fake.reply(answer('{"title": "A", "year": 1}'), delay=SLOW_ANSWER)
    fake.reply(answer('{"title": "B", "year": 2}'))
    result = await client(timeout=TIMEOUT).generate("x", output=Book)
    return result.output


async def timeouts_past_the_retry(fake: FakeProvider, client: Callable[..., LLMClient],
                                  answer: Answer) -> ProviderConnectionError:
    """Both answers (first try and its one retry) come after the timeout: the error raised."""
    for _ in range(2):
        fake.reply(answer('{"title": "A", "year": 1}'), delay=SLOW_ANSWER)
    c = client(timeout=TIMEOUT, retry_policy=ONE_RETRY)
    with pytest.raises(ProviderConnectionError, match="timed out") as info:
        await c.generate("x", output=Book)
    return info.value


async def assert_refused_connection_is_retried_then_raised(client: LLMClient) -> None:
    """``client`` aims at dead_url() with ONE_RETRY: a connection error after its one retry."""
    with pytest.raises(ProviderConnectionError, match="could not connect"):
        await client.generate("x", output=Book)
    assert client.metrics.retries == 1


async def assert_a_non_json_body_is_retried(fake: FakeProvider, client: LLMClient, answer: Answer) -> None:
    """An HTTP 200 whose body is not JSON (a proxy's page) is retried like a server error."""
    fake.reply(raw=b"<html>bad gateway</html>{", status=200)
    fake.reply(answer('{"title": "A", "year": 1}'))
    result = await client.generate("x", output=Book)
    assert result.output.year == 1 and client.metrics.retries == 1
