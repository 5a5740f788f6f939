"""The one exception tree of stagehand_py.

Every error the library raises on purpose derives from :class:`StagehandError`, so a caller
can catch everything with one ``except`` and still tell the cases apart::

    StagehandError
    ├── ConfigurationError            bad option, missing key, nothing to talk to
    │   ├── BrowserNotFoundError      no Chromium executable could be found
    │   └── CassetteError             a recorded-HTTP cassette is missing, unreadable or has no match
    ├── InvalidArgumentError          bad input to a public call (also a ValueError)
    │   ├── InvalidSchemaError        a schema that is not a pydantic model / JSON Schema
    │   └── UnknownVariableError      an action names a %placeholder% with no value
    ├── BrowserError                  the browser or page misbehaved
    │   ├── PageClosedError           the page (or its browser) is gone
    │   └── CDPError                  a Chrome DevTools Protocol command failed
    ├── SnapshotError                 the page could not be captured
    ├── ActionError                   executing an Action failed
    │   ├── ElementNotFoundError      the selector resolves to no element
    │   │   └── AmbiguousSelectorError  ...or to more than one element
    │   ├── UnsupportedMethodError    the action names a method we do not know
    │   └── ActionFailedError         the browser refused or the action threw
    │       └── SecretPlacementError  a Secret would go outside its origins or field: nothing typed
    │           └── SecretInTraceError  ...or into a Playwright trace the user records: nothing typed
    ├── StagehandTimeoutError         a per-call timeout ran out (also a TimeoutError)
    ├── LLMError                      talking to a model failed
    │   ├── ProviderError             the provider answered with an error (status, body)
    │   │   ├── AuthenticationError   401/403: wrong or missing key (not retried)
    │   │   ├── BadRequestError       400/404/422: we sent something invalid (not retried)
    │   │   ├── RateLimitError        429 after the retries ran out
    │   │   ├── ServerError           5xx after the retries ran out
    │   │   └── ProviderConnectionError  connection refused / reset / timed out
    │   ├── OutputValidationError     the model's answer stayed invalid after the re-asks
    │   ├── RefusalError              the model refused or answered with nothing
    │   ├── UsageLimitExceededError   a configured request/token limit would be exceeded
    │   │   └── CostLimitExceededError  ... the dollar limit (max_cost_usd), with spent/limit
    │   ├── ModelRequestBlockedError  a real model was called while the kill switch is on
    │   └── TestDoubleError       a test double was misused (script ran out, answer off-schema)
    ├── CacheError                    the action cache could not be read or written
    ├── AgentError                    the agent could not run (not: the task failed)
    └── ExpectationError              expect()'s claim is not what the page shows (an AssertionError too)

Rules every raise follows: the message says what went wrong, with which input, and what to
do about it; the cause is chained (``raise ... from exc``); secret values (variables) never
appear in a message.
"""

from __future__ import annotations

from typing import Any

# No __all__ here: the public list is stagehand_py.__all__ (literal, pinned by tests/test_public_api.py,
# which reads this module's classes to check that every one of them is exported).


class StagehandError(Exception):
    """Root of every error stagehand_py raises on purpose."""


# --- configuration and input -------------------------------------------------------------


class ConfigurationError(StagehandError):
    """The library is set up in a way that cannot work (missing key, conflicting options)."""


class BrowserNotFoundError(ConfigurationError):
    """No Chromium executable was found where we looked."""


class InvalidArgumentError(StagehandError, ValueError):
    """A public call got an argument it cannot use."""


class InvalidSchemaError(InvalidArgumentError):
    """A schema is neither a pydantic model class nor a valid JSON Schema."""


class UnknownVariableError(InvalidArgumentError):
    """An action uses a ``%name%`` placeholder for which no variable was given.

    Only the *names* are kept on the error, never values.
    """

    def __init__(self, message: str, *, missing: list[str], available: list[str]) -> None:
        super().__init__(message)
        self.missing = missing
        self.available = available


# --- browser -----------------------------------------------------------------------------


class BrowserError(StagehandError):
    """The browser, a page or a frame did not behave as needed."""


class PageClosedError(BrowserError):
    """The page (or its whole browser) was closed."""


class CDPError(BrowserError):
    """A Chrome DevTools Protocol command answered with an error."""

    def __init__(self, message: str, *, method: str, code: int | None = None) -> None:
        super().__init__(message)
        self.method = method
        self.code = code


class SnapshotError(StagehandError):
    """The page could not be captured into a Snapshot."""


# --- actions -----------------------------------------------------------------------------


class ActionError(StagehandError):
    """Executing an :class:`~stagehand_py.Action` failed."""

    def __init__(self, message: str, *, selector: str | None = None, method: str | None = None) -> None:
        super().__init__(message)
        self.selector = selector
        self.method = method


class ElementNotFoundError(ActionError):
    """The action's selector resolves to no element on the page."""


class AmbiguousSelectorError(ElementNotFoundError):
    """The action's selector matches more than one element (an Action acts on exactly one).

    A subclass of :class:`ElementNotFoundError` because the remedy is the same: locate the
    element again (observe, or a more specific selector).
    """


class UnsupportedMethodError(ActionError, InvalidArgumentError):
    """The action names a method stagehand_py does not know."""


class ActionFailedError(ActionError):
    """The element was found but the browser action on it failed."""


class SecretPlacementError(ActionFailedError):
    """An act would type a :class:`~stagehand_py.Secret` outside the origins or the field it is
    bound to; nothing was typed. ``variable`` names it (never its value)."""

    def __init__(self, message: str, *, variable: str = "", selector: str | None = None, method: str | None = None) -> None:
        super().__init__(message, selector=selector, method=method)
        self.variable = variable


class SecretInTraceError(SecretPlacementError):
    """An act would type a variable's value while a Playwright trace the user started records the
    browser context (the trace would keep it, and stagehand_py cannot redact a file it does not
    write); nothing was typed. Record with ``Stagehand(trace="on")`` instead (values scrubbed), or
    accept the value in your trace with ``Stagehand(allow_secrets_in_trace=[name])``."""


class StagehandTimeoutError(StagehandError, TimeoutError):
    """A call did not finish within its timeout."""


# --- models ------------------------------------------------------------------------------


class LLMError(StagehandError):
    """Talking to a language model failed."""


class ProviderError(LLMError):
    """The model provider answered with an error.

    ``status`` is the HTTP status when there was one, ``body`` the provider's error payload.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        model: str,
        status: int | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.model = model
        self.status = status
        self.body = body


class AuthenticationError(ProviderError):
    """The provider rejected our credentials (401/403). Not retried."""


class BadRequestError(ProviderError):
    """The provider rejected the request as invalid (400/404/422). Not retried."""


class RateLimitError(ProviderError):
    """Rate limited (429) and the retries ran out."""


class ServerError(ProviderError):
    """The provider failed (5xx) and the retries ran out."""


class ProviderConnectionError(ProviderError):
    """The provider could not be reached, or the request timed out, after the retries."""


class OutputValidationError(LLMError):
    """The model's structured output stayed invalid after the bounded re-asks.

    ``last_output`` is the last raw answer, ``attempts`` how many answers were tried, and
    ``usage`` the tokens spent on all of them.
    """

    def __init__(self, message: str, *, last_output: Any, attempts: int, usage: Any, errors: Any = None) -> None:
        super().__init__(message)
        self.last_output = last_output
        self.attempts = attempts
        self.usage = usage
        self.errors = errors


class RefusalError(LLMError):
    """The model refused, or answered with no content at all."""


class UsageLimitExceededError(LLMError):
    """A configured usage limit (requests or tokens) would be exceeded by the next call."""


class CostLimitExceededError(UsageLimitExceededError):
    """The next model call would cross ``UsageLimits(max_cost_usd=...)`` (or the price is unknown).

    ``spent_usd`` is what was spent before it (``None``: unknown), ``limit_usd`` the cap,
    ``next_estimate_usd`` the estimated dollars of the refused call's input.
    """

    def __init__(self, message: str, *, spent_usd: float | None, limit_usd: float, next_estimate_usd: float | None) -> None:
        super().__init__(message)
        self.spent_usd = spent_usd
        self.limit_usd = limit_usd
        self.next_estimate_usd = next_estimate_usd


class ModelRequestBlockedError(LLMError):
    """A real model request was attempted while :func:`stagehand_py.testing.block_model_requests` is active."""


class TestDoubleError(LLMError, AssertionError):
    """A test double was used wrongly: a scripted model ran out of answers, or a scripted
    answer does not fit the request's schema. Also an ``AssertionError`` so test runners
    report it as a failed expectation."""

    __test__ = False  # not a pytest test class despite the name


class CassetteError(ConfigurationError):
    """A cassette (recorded provider HTTP traffic) is missing or unreadable, or a request has
    no recorded match while replaying."""


# --- the rest ----------------------------------------------------------------------------


class CacheError(StagehandError):
    """The action cache could not be read or written."""


class AgentError(StagehandError):
    """The agent could not run (a task that fails is a result, not an error)."""


class ExpectationError(StagehandError, AssertionError):
    """``expect(claim)`` found the page does not show the claim; ``expectation`` holds the verdict
    and the evidence line. An ``AssertionError`` so a test fails with that evidence."""

    def __init__(self, message: str, *, expectation: Any = None) -> None:
        super().__init__(message)
        self.expectation = expectation
