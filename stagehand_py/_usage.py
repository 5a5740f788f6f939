"""Tokens, time and dollars spent by model calls: the value every result carries, the running
totals of a client and its hard limits, in one place.

Usage is what users pay for, so every model call is counted in one place (the client's
:class:`Metrics`), and limits are checked *before* a call, so a limit stops the call that would
cross it instead of reporting afterwards that it was crossed. A leaf module (pydantic and the
error tree only), so the public types (``ActResult.usage``) hold :class:`Usage` without
importing the model client.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ._errors import CostLimitExceededError, UsageLimitExceededError

__all__ = ["Metrics", "Usage", "UsageLimits", "estimate_tokens"]


class Usage(BaseModel):
    """Tokens and time spent. Add two with ``+``; ``Usage()`` is zero."""

    model_config = ConfigDict(frozen=True)

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    #: Input tokens served from the provider's prompt cache (a subset of ``input_tokens``).
    cached_tokens: int = 0
    #: Hidden reasoning tokens (a subset of ``output_tokens`` for providers that report them).
    reasoning_tokens: int = 0
    wall_ms: float = 0.0
    #: US dollars, from the model's price (:class:`~stagehand_py.llm.ModelPrice`); ``None`` when
    #: the price is unknown (a model the price table does not list and no ``price=`` given).
    #: A sum with an unknown part is unknown: a partial sum would read as the whole bill.
    cost_usd: float | None = 0.0
    #: Where the price behind ``cost_usd`` came from (``"genai-prices 0.2.3 (bundled data):
    #: openai/gpt-4.1-mini"``, the override table, ``price=``...); several, ``"; "``-joined, in a
    #: sum over models priced differently; ``None`` when nothing was priced.
    cost_source: str | None = None

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            requests=self.requests + other.requests,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            wall_ms=self.wall_ms + other.wall_ms,
            cost_usd=None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd,
            cost_source=_joined_sources(self.cost_source, other.cost_source),
        )
    def __sub__(self, other: Usage) -> Usage:
        """What was spent between two readings of a running total (``later - earlier``)."""
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            requests=self.requests - other.requests,
            input_tokens=self.input_tokens - other.input_tokens,
            output_tokens=self.output_tokens - other.output_tokens,
            cached_tokens=self.cached_tokens - other.cached_tokens,
            reasoning_tokens=self.reasoning_tokens - other.reasoning_tokens,
            wall_ms=self.wall_ms - other.wall_ms,
            cost_usd=None if self.cost_usd is None or other.cost_usd is None else self.cost_usd - other.cost_usd,
            cost_source=self.cost_source,
        )


def _joined_sources(first: str | None, second: str | None) -> str | None:
    names = [n for n in dict.fromkeys((first or "").split("; ") + (second or "").split("; ")) if n]
    return "; ".join(names) or None


class UsageLimits(BaseModel):
    """Hard caps for one :class:`LLMClient`. ``None`` means no cap.

    Token caps are checked against what was spent so far plus an estimate of the next
    request's input (characters / 4), so the call that would cross a cap is never made.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_requests: int | None = Field(default=None, ge=0)
    max_input_tokens: int | None = Field(default=None, ge=0)
    max_output_tokens: int | None = Field(default=None, ge=0)
    max_total_tokens: int | None = Field(default=None, ge=0)
    #: US dollars. Needs a known price (the model is in the price table, or ``price=`` is given).
    max_cost_usd: float | None = Field(default=None, ge=0)

    def check_before(self, spent: Usage, *, next_input_estimate: int, next_cost_estimate: float | None = None) -> None:
        """Raise :class:`UsageLimitExceededError` if the next request would cross a cap.

        ``next_cost_estimate`` is the dollars of the next request's input (its output is unknown
        until it is made, so a call is allowed while the input alone stays under the cap).
        """
        if self.max_cost_usd is not None:
            self._check_cost(spent, next_cost_estimate)
        checks: list[tuple[str, int | None, int]] = [
            ("max_requests", self.max_requests, spent.requests + 1),
            ("max_input_tokens", self.max_input_tokens, spent.input_tokens + next_input_estimate),
            # Output of the next call is unknown: stop once the cap is already reached.
            ("max_output_tokens", self.max_output_tokens, spent.output_tokens + (1 if self.max_output_tokens is not None else 0)),
            ("max_total_tokens", self.max_total_tokens, spent.total_tokens + next_input_estimate),
        ]
        for name, cap, would_be in checks:
            if cap is not None and would_be > cap:
                raise UsageLimitExceededError(
                    f"usage limit {name}={cap} would be exceeded by the next model request "
                    f"(spent so far: {spent.requests} requests, {spent.input_tokens} input and "
                    f"{spent.output_tokens} output tokens; next request ~{next_input_estimate} input "
                    "tokens). Raise the limit in usage_limits, or start a new LLMClient."
                )


    def _check_cost(self, spent: Usage, next_cost_estimate: float | None) -> None:
        assert self.max_cost_usd is not None
        if spent.cost_usd is None or next_cost_estimate is None:
            raise CostLimitExceededError(
                f"usage limit max_cost_usd={self.max_cost_usd:g} cannot be enforced: the model's price is unknown, so "
                "no request is made. Pass LLMClient(..., price=ModelPrice(input_per_million=..., "
                "output_per_million=...)), or use a model from the price table.",
                spent_usd=spent.cost_usd, limit_usd=self.max_cost_usd, next_estimate_usd=next_cost_estimate,
            )
        if spent.cost_usd + next_cost_estimate > self.max_cost_usd or spent.cost_usd >= self.max_cost_usd:
            raise CostLimitExceededError(
                f"usage limit max_cost_usd={self.max_cost_usd:g} would be exceeded by the next model request: spent "
                f"${spent.cost_usd:.6f} so far in {spent.requests} requests, the next one's input alone costs "
                f"~${next_cost_estimate:.6f}. Raise max_cost_usd in usage_limits, or start a new LLMClient.",
                spent_usd=spent.cost_usd, limit_usd=self.max_cost_usd, next_estimate_usd=next_cost_estimate,
            )


def estimate_tokens(text: str) -> int:
    """A provider-independent estimate: about four characters a token."""
    return (len(text) + 3) // 4


class Metrics:
    """Running totals of one client, overall and per purpose (``"observe"``, ``"act"``, ...).

    Reads return copies (``Usage`` is immutable), so a caller can keep a value and diff it
    against a later one.
    """

    def __init__(self) -> None:
        self._total = Usage()
        self._by_purpose: dict[str, Usage] = {}
        self._reasks = 0
        self._retries = 0
        self._failures = 0

    @property
    def total(self) -> Usage:
        return self._total

    @property
    def by_purpose(self) -> dict[str, Usage]:
        return dict(self._by_purpose)

    @property
    def reasks(self) -> int:
        """How many times an invalid answer was sent back to the model."""
        return self._reasks

    @property
    def retries(self) -> int:
        """How many transport retries (rate limit, 5xx, timeouts) were made."""
        return self._retries

    @property
    def failures(self) -> int:
        """How many ``generate`` calls ended in an error."""
        return self._failures

    def record(self, purpose: str, usage: Usage) -> None:
        self._total = self._total + usage
        self._by_purpose[purpose] = self._by_purpose.get(purpose, Usage()) + usage

    def record_reask(self) -> None:
        self._reasks += 1

    def record_retry(self) -> None:
        self._retries += 1

    def record_failure(self) -> None:
        self._failures += 1

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary, e.g. for a run report."""
        return {
            "total": self._total.model_dump(),
            "by_purpose": {k: v.model_dump() for k, v in self._by_purpose.items()},
            "reasks": self._reasks,
            "retries": self._retries,
            "failures": self._failures,
        }

    def __repr__(self) -> str:
        t = self._total
        return (
            f"Metrics(requests={t.requests}, input_tokens={t.input_tokens}, "
            f"output_tokens={t.output_tokens}, cost_usd={t.cost_usd}, purposes={sorted(self._by_purpose)})"
        )
