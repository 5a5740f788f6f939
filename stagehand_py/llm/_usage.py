"""Token accounting: per request, per client, per purpose, and optional hard limits.

Usage is what users pay for, so every model call is counted in one place (the client), and
limits are checked *before* a call, so a limit stops the call that would cross it instead of
reporting afterwards that it was crossed.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .._errors import CostLimitExceededError, UsageLimitExceededError
from .._usage import Usage

__all__ = ["Metrics", "UsageLimits", "estimate_tokens"]


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
