"""Dollar prices of the models the docs name, and how a model name finds its price.

A dated table, not a live feed: the library makes no request to learn prices. Users whose
contract differs (or whose model is not here) pass ``LLMClient(..., price=ModelPrice(...))``.
"""

from __future__ import annotations

import ipaddress
from datetime import date
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["PRICES_AS_OF", "ModelPrice", "FREE", "price_for"]

#: When the table below was taken: the providers' standard (not batch, not priority) list
#: prices per million tokens. Prices change; check the provider's page for money that matters.
PRICES_AS_OF = date(2026, 11, 25)

_MILLION = 1_000_000


class ModelPrice(BaseModel):
    """US dollars per million tokens of one model.

    ``cached_input_per_million`` prices input served from the provider's prompt cache (a part of
    the input tokens); ``None`` prices it like any input.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_per_million: float = Field(ge=0)
    output_per_million: float = Field(ge=0)
    cached_input_per_million: float | None = Field(default=None, ge=0)

    def cost(self, *, input_tokens: int, output_tokens: int, cached_tokens: int = 0) -> float:
        """Dollars for one call's tokens (``cached_tokens`` is the cached part of ``input_tokens``)."""
        cached = min(max(cached_tokens, 0), input_tokens)
        cached_rate = self.input_per_million if self.cached_input_per_million is None else self.cached_input_per_million
        dollars = ((input_tokens - cached) * self.input_per_million + cached * cached_rate
                   + output_tokens * self.output_per_million)
        return dollars / _MILLION


#: What a model running on this machine (or on a loopback server) costs per token.
FREE = ModelPrice(input_per_million=0.0, output_per_million=0.0, cached_input_per_million=0.0)

# Keys are model-name prefixes; the longest matching prefix wins, so "gpt-4.1-mini-2025-04-14"
# finds "gpt-4.1-mini", not "gpt-4.1".
_TABLE: dict[str, ModelPrice] = {
    # OpenAI
    "gpt-4.1": ModelPrice(input_per_million=2.00, output_per_million=8.00, cached_input_per_million=0.50),
    "gpt-4.1-mini": ModelPrice(input_per_million=0.40, output_per_million=1.60, cached_input_per_million=0.10),
    "gpt-4.1-nano": ModelPrice(input_per_million=0.10, output_per_million=0.40, cached_input_per_million=0.025),
    "gpt-4o": ModelPrice(input_per_million=2.50, output_per_million=10.00, cached_input_per_million=1.25),
    "gpt-4o-mini": ModelPrice(input_per_million=0.15, output_per_million=0.60, cached_input_per_million=0.075),
    "o3": ModelPrice(input_per_million=2.00, output_per_million=8.00, cached_input_per_million=0.50),
    "o3-mini": ModelPrice(input_per_million=1.10, output_per_million=4.40, cached_input_per_million=0.55),
    "o4-mini": ModelPrice(input_per_million=1.10, output_per_million=4.40, cached_input_per_million=0.275),
    "computer-use-preview": ModelPrice(input_per_million=3.00, output_per_million=12.00),
    # Anthropic (cache reads; cache writes are billed as input here, slightly under the 1.25x list)
    "claude-sonnet-4-5": ModelPrice(input_per_million=3.00, output_per_million=15.00, cached_input_per_million=0.30),
    "claude-sonnet-4": ModelPrice(input_per_million=3.00, output_per_million=15.00, cached_input_per_million=0.30),
    "claude-3-7-sonnet": ModelPrice(input_per_million=3.00, output_per_million=15.00, cached_input_per_million=0.30),
    "claude-haiku-4-5": ModelPrice(input_per_million=1.00, output_per_million=5.00, cached_input_per_million=0.10),
    "claude-3-5-haiku": ModelPrice(input_per_million=0.80, output_per_million=4.00, cached_input_per_million=0.08),
    "claude-opus-4-5": ModelPrice(input_per_million=5.00, output_per_million=25.00, cached_input_per_million=0.50),
    "claude-opus-4-1": ModelPrice(input_per_million=15.00, output_per_million=75.00, cached_input_per_million=1.50),
    "claude-opus-4": ModelPrice(input_per_million=15.00, output_per_million=75.00, cached_input_per_million=1.50),
}

_PRICED_PROVIDERS = ("openai", "anthropic")


def _is_loopback(base_url: str) -> bool:
    host = urlsplit(base_url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def price_for(model: str, *, base_url: str | None = None) -> ModelPrice | None:
    """The table's price of ``model`` (``"openai/gpt-4.1-mini"``, a dated snapshot name, ...).

    ``local/...`` models and any model behind a loopback ``base_url`` cost nothing. A model the
    table does not know, or one behind another ``base_url`` (whose bill we cannot know), gives
    ``None``: cost unknown, never a guess of 0.
    """
    provider, _, name = model.rpartition("/") if "/" in model else ("", "", model)
    provider = provider.split("/")[0].lower()
    if provider == "local":
        return FREE
    if base_url is not None:
        return FREE if _is_loopback(base_url) else None
    if provider and provider not in _PRICED_PROVIDERS:
        return None
    name = name.lower()
    matches = [key for key in _TABLE if name == key or name.startswith(key + "-")]
    return _TABLE[max(matches, key=len)] if matches else None
