"""Transport retries: the one retry loop between us and a provider.

Rate limits, 5xx answers, timeouts and dropped connections are retried with exponential
backoff (honouring ``retry-after``) up to a cap; everything else fails at once. The provider
SDKs' own retries are switched off (``max_retries=0``) so attempts and waits are counted and
configured only here.
"""

from __future__ import annotations

import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from .._errors import ProviderConnectionError, RateLimitError, ServerError

__all__ = ["RetryPolicy", "is_retryable", "retry_after_seconds", "call_with_retries"]

T = TypeVar("T")
logger = logging.getLogger("stagehand_py")


class RetryPolicy(BaseModel):
    """How transport failures are retried. Tests set tiny backoffs so they never sleep long."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Retries after the first attempt (0 disables retrying).
    max_retries: int = Field(default=3, ge=0)
    initial_backoff: float = Field(default=0.5, ge=0)
    max_backoff: float = Field(default=20.0, ge=0)
    multiplier: float = Field(default=2.0, ge=1)
    #: Random extra wait, as a fraction of the backoff, so parallel clients do not retry in step.
    jitter: float = Field(default=0.1, ge=0, le=1)
    honour_retry_after: bool = True
    #: A longer ``retry-after`` is capped to this many seconds.
    max_retry_after: float = Field(default=60.0, ge=0)


def is_retryable(exc: BaseException) -> bool:
    """Rate limits, server errors and connection problems; never auth or bad requests."""
    return isinstance(exc, RateLimitError | ServerError | ProviderConnectionError)


def retry_after_seconds(exc: BaseException) -> float | None:
    """The wait the provider asked for, from the error or the HTTP response it chained.

    Reads ``retry-after-ms`` and ``retry-after`` (seconds or an HTTP date) from the response
    of any exception in the cause chain, so it works for every SDK built on httpx.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        explicit = getattr(current, "retry_after", None)
        if isinstance(explicit, int | float):
            return float(explicit)
        response = getattr(current, "response", None)
        headers = getattr(response, "headers", None)
        if headers is not None:
            parsed = _parse_retry_after(headers)
            if parsed is not None:
                return parsed
        current = current.__cause__
    return None


def _parse_retry_after(headers: Any) -> float | None:
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_tz(value)
        if parsed is None:
            return None
        return max(0.0, email.utils.mktime_tz(parsed) - time.time())


def _wait_for(policy: RetryPolicy) -> Callable[[RetryCallState], float]:
    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        if exc is not None and policy.honour_retry_after:
            asked = retry_after_seconds(exc)
            if asked is not None:
                return min(asked, policy.max_retry_after)
        backoff = min(policy.initial_backoff * policy.multiplier ** (state.attempt_number - 1), policy.max_backoff)
        return backoff + random.uniform(0, backoff * policy.jitter)

    return wait


async def call_with_retries(
    fn: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    describe: str,
    on_retry: Callable[[BaseException, float], None] | None = None,
) -> T:
    """Run ``fn`` with the policy's retries; the last error is re-raised unchanged."""

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        if exc is not None:
            logger.warning(
                "%s failed (%s); retry %d of %d in %.2fs",
                describe, type(exc).__name__, state.attempt_number, policy.max_retries, wait,
            )
            if on_retry is not None:
                on_retry(exc, wait)

    retrying = AsyncRetrying(
        stop=stop_after_attempt(policy.max_retries + 1),
        wait=_wait_for(policy),
        retry=retry_if_exception(is_retryable),
        before_sleep=before_sleep,
        reraise=True,
    )
    return await retrying(fn)
