"""Dollar prices of models, and how a model name finds its price (and says where it came from).

Where a price comes from, first match wins:

1. ``LLMClient(..., price=ModelPrice(...))``: the user's contract;
2. a model on this machine (``local/...``, or an OpenAI-compatible server on loopback): free;
3. this module's dated override table (:data:`PRICES_AS_OF`), for the few models whose price
   the catalogue below lacks or gets wrong;
4. ``genai-prices``' catalogue of many providers' list prices, as shipped in the installed
   package (its data is bundled; the library never asks it to fetch updates).

No request is ever made to learn a price. A model none of these knows has an unknown cost
(``None``), never a guess of 0.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["PRICES_AS_OF", "ModelPrice", "FREE", "price_for", "price_with_source", "USER_PRICE_SOURCE"]

logger = logging.getLogger("stagehand_py")

#: When the override table below was checked against the providers' standard (not batch, not
#: priority) list prices per million tokens.
PRICES_AS_OF = date(2026, 11, 26)

#: The source reported for a price the user gave with ``price=``.
USER_PRICE_SOURCE = "price= given to LLMClient"
_FREE_SOURCE = "free: a model on this machine"
_TABLE_SOURCE = f"stagehand_py override table of {PRICES_AS_OF.isoformat()}"

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

# The overrides: a key matches its model and the model's dated snapshots ("gpt-4.1-mini-2025-04-14"),
# not other models that share a prefix. Pinned here: the models Stagehand picks by default
# (DEFAULT_MODELS), so a max_cost_usd budget set for them does not move when a newer genai-prices
# is installed. On PRICES_AS_OF they equalled genai-prices 0.2.3 and the providers' list prices;
# tests/llm/test_cost.py fails when the installed catalogue disagrees, so a change is looked at.
_TABLE: dict[str, ModelPrice] = {
    "gpt-4.1-mini": ModelPrice(input_per_million=0.40, output_per_million=1.60, cached_input_per_million=0.10),
    # Cache writes are billed as input here (Anthropic's list price for them is 1.25x input).
    "claude-sonnet-4-5": ModelPrice(input_per_million=3.00, output_per_million=15.00, cached_input_per_million=0.30),
}

#: A dated snapshot's suffix: "-2025-04-16" (OpenAI, Google) or "-20250929" (Anthropic).
_SNAPSHOT_DATE = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")

_PRICED_PROVIDERS = ("openai", "anthropic", "google", "azure")
#: Providers whose base_url is the provider's own endpoint or a proxy to it (so the list price
#: applies); for the others a base_url means another server (a loopback one is a local model).
_ENDPOINT_PROVIDERS = ("google", "azure")


def _is_loopback(base_url: str) -> bool:
    host = urlsplit(base_url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def price_for(model: str, *, base_url: str | None = None) -> ModelPrice | None:
    """The price of ``model`` (``"openai/gpt-4.1-mini"``, ``"google/gemini-2.5-flash"``, a dated
    snapshot name, ...); see :func:`price_with_source` for where it comes from.

    ``local/...`` models and an ``openai/`` or ``anthropic/`` model behind a loopback ``base_url``
    cost nothing. A model nobody prices, or one behind another ``base_url`` (whose bill we cannot
    know), gives ``None``: cost unknown, never a guess of 0.
    """
    return price_with_source(model, base_url=base_url)[0]


def price_with_source(model: str, *, base_url: str | None = None) -> tuple[ModelPrice | None, str | None]:
    """The price of ``model`` and where it came from (``None, None`` when unknown)."""
    provider, _, name = model.rpartition("/") if "/" in model else ("", "", model)
    provider = provider.split("/")[0].lower()
    if provider == "local":
        return FREE, _FREE_SOURCE
    if base_url is not None and provider not in _ENDPOINT_PROVIDERS:
        return (FREE, _FREE_SOURCE) if _is_loopback(base_url) else (None, None)
    if provider and provider not in _PRICED_PROVIDERS:
        return None, None
    name = name.lower()
    if (override := _TABLE.get(_SNAPSHOT_DATE.sub("", name))) is not None:
        return override, _TABLE_SOURCE
    return _catalogue_price(name, provider or None)


def _catalogue_price(name: str, provider: str | None) -> tuple[ModelPrice | None, str | None]:
    """genai-prices' price of ``name`` as it is today, from the data the package ships.

    Models priced in tiers (a long prompt costs more per token) get the base tier: the price of
    prompts under the first threshold (200k tokens for Gemini Pro and Claude Sonnet).
    """
    try:
        from genai_prices import __version__ as catalogue_version
        from genai_prices import data_snapshot
    except ImportError:  # an install without it: no catalogue, prices unknown
        return None, None
    # get_snapshot() is the bundled data unless the application itself installed fresher data
    # with genai-prices' UpdatePrices; nothing here starts an update.
    snapshot = data_snapshot.get_snapshot()
    try:
        found_provider, info = snapshot.find_provider_model(name, None, provider, None)
        prices = info.get_prices(datetime.now(tz=UTC))
    except (LookupError, TypeError, ValueError, AttributeError) as exc:
        if not isinstance(exc, LookupError):
            logger.debug("genai-prices could not price %r: %s: %s", name, type(exc).__name__, exc)
        return None, None
    input_rate = _base_rate(getattr(prices, "input_mtok", None))
    output_rate = _base_rate(getattr(prices, "output_mtok", None))
    if input_rate is None or output_rate is None:
        return None, None
    cached_rate = _base_rate(getattr(prices, "cache_read_mtok", None))
    tiered = any(hasattr(getattr(prices, field, None), "tiers") for field in ("input_mtok", "output_mtok"))
    data = "auto-updated data" if snapshot.from_auto_update else "bundled data"
    source = (f"genai-prices {catalogue_version} ({data}): {found_provider.id}/{info.id}"
              f"{', base tier' if tiered else ''}")
    return ModelPrice(input_per_million=input_rate, output_per_million=output_rate,
                      cached_input_per_million=cached_rate), source


def _base_rate(value: Any) -> float | None:
    """Dollars per million tokens: a flat price, or a tiered price's base."""
    if isinstance(value, Decimal | int | float):
        return float(value)
    base = getattr(value, "base", None)
    return float(base) if isinstance(base, Decimal | int | float) else None
