"""Tokens, time and dollars spent by model calls: the value every result carries.

A leaf module (pydantic only), so the public types (``ActResult.usage``) hold it without
importing the model client; the client's accounting and limits are in ``llm/_usage.py``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Usage"]


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
