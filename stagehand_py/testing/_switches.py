"""Context managers for test suites: block real model requests; capture every request.

Both use context variables, so they apply to the current task and the tasks it starts, and
nothing leaks between tests run concurrently.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..llm._hooks import BLOCK_ENV_VAR, CapturedCall, block_switch, capture_sinks, model_requests_blocked

__all__ = ["block_model_requests", "capture_requests", "model_requests_blocked", "BLOCK_ENV_VAR"]


@contextmanager
def block_model_requests(enabled: bool = True) -> Iterator[None]:
    """Inside, any request to a real model raises ``ModelRequestBlockedError``.

    Test doubles (``is_test_double = True``) and cassette replays still answer. The same
    switch is on process-wide when the env var ``STAGEHAND_BLOCK_MODEL_REQUESTS=1`` is set
    (read at request time). ``block_model_requests(False)`` turns it off for a block, except
    that the env var still applies.
    """
    token = block_switch.set(enabled)
    try:
        yield
    finally:
        block_switch.reset(token)


@contextmanager
def capture_requests() -> Iterator[list[CapturedCall]]:
    """Collect every model request made inside, with its response or error.

    ::

        with capture_requests() as calls:
            await client.generate("hi", purpose="observe", output=Answer)
        assert calls[0].request.purpose == "observe"

    Nested captures each see the requests made inside them.
    """
    sink: list[CapturedCall] = []
    token = capture_sinks.set((*capture_sinks.get(), sink))
    try:
        yield sink
    finally:
        capture_sinks.reset(token)
