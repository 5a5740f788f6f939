"""Cost in dollars: genai-prices' catalogue behind the dated override table, the user's price, where
each price came from, cost per call / operation / agent run, and ``UsageLimits(max_cost_usd=...)``
stopping before the call that would cross it."""

from __future__ import annotations

import datetime

import pytest
from pydantic import BaseModel

from stagehand_py import ConfigurationError, CostLimitExceededError, UsageLimitExceededError
from stagehand_py.llm import PRICES_AS_OF, LLMClient, ModelPrice, ModelResponse, Usage, UsageLimits, price_for
from stagehand_py.llm._pricing import price_with_source
from stagehand_py.testing import FunctionLLM, ScriptedLLM


class Title(BaseModel):
    title: str


MINI = ModelPrice(input_per_million=0.40, output_per_million=1.60, cached_input_per_million=0.10)


def test_table_is_dated_and_finds_dated_model_names() -> None:
    assert isinstance(PRICES_AS_OF, datetime.date)
    assert price_for("openai/gpt-4.1-mini") == MINI
    # A dated snapshot finds its family, and the longest prefix wins (mini is not gpt-4.1).
    assert price_for("gpt-4.1-mini-2025-04-14") == MINI
    assert price_for("openai/gpt-4.1").input_per_million == 2.00
    assert price_for("openai/gpt-4o-mini-2024-07-18").input_per_million == 0.15
    assert price_for("openai/o3-mini").input_per_million == 1.10
    assert price_for("anthropic/claude-sonnet-4-5-20250929").output_per_million == 15.00
    assert price_for("anthropic/claude-haiku-4-5").input_per_million == 1.00
    assert price_for("anthropic/claude-opus-4-1").input_per_million == 15.00


def _catalogue_models(*providers: str) -> list[tuple[str, str]]:
    """``(provider, model id)`` of every model genai-prices prices per input and output token today."""
    from genai_prices import data_snapshot

    now = datetime.datetime.now(tz=datetime.UTC)
    found = []
    for provider in data_snapshot.get_snapshot().providers:
        if provider.id not in providers:
            continue
        for model in provider.models:
            prices = model.get_prices(now)
            if getattr(prices, "input_mtok", None) is not None and getattr(prices, "output_mtok", None) is not None:
                found.append((provider.id, model.id))
    return found


async def test_a_model_with_a_known_price_never_has_an_unknown_cost() -> None:
    catalogue = _catalogue_models("openai", "anthropic", "google")
    assert len(catalogue) > 150  # the catalogue really was read (0.2.3 prices 192 of these)
    unknown = []
    for provider, model_id in catalogue:
        if model_id.startswith("ft:"):  # fine-tuned: a real name has the base model's date and an id
            model_id = {"ft:gpt-4o": "ft:gpt-4o-2024-08-06:acme::abc1", "ft:gpt-4o-mini": "ft:gpt-4o-mini-2024-07-18:acme::x"}.get(
                model_id, model_id)
        client = LLMClient(FunctionLLM(lambda request: {"title": "x"}, model_name=f"{provider}/{model_id}"))
        usage = (await client.generate("hello", output=Title)).usage
        if usage.cost_usd is None or not usage.cost_source:
            unknown.append(f"{provider}/{model_id}")
    assert unknown == []
    # The newest models the old hand-kept table lacked, and the docs' ones, by their public names.
    for name in ("openai/gpt-5", "openai/gpt-5.1", "anthropic/claude-sonnet-4-6", "anthropic/claude-opus-4-5-20251101",
                 "google/gemini-2.5-flash", "google/gemini-2.5-pro", "google/gemini-3-pro-preview", "azure/gpt-4o"):
        price, source = price_with_source(name)
        assert price is not None and price.output_per_million > 0, name
        assert source is not None and source.startswith("genai-prices 0.") and "bundled data" in source, (name, source)
    assert "base tier" in (price_with_source("google/gemini-3-pro-preview")[1] or "")


def test_every_price_names_its_source() -> None:
    assert price_with_source("openai/gpt-4.1-mini-2025-04-14") == (MINI, f"stagehand_py override table of {PRICES_AS_OF}")
    assert price_with_source("local/x.gguf")[1] == "free: a model on this machine"
    assert price_with_source("openai/qwen", base_url="http://127.0.0.1:8080/v1")[1] == "free: a model on this machine"
    assert price_with_source("openai/some-new-model") == (None, None)
    # Google and Azure endpoints (or a proxy to them) are billed at list price whatever the base_url.
    assert price_with_source("google/gemini-2.5-flash", base_url="https://proxy.example/gemini")[0] is not None
    # Sums keep every source once: a run over two models says both.
    a, b = Usage(cost_usd=1.0, cost_source="table"), Usage(cost_usd=2.0, cost_source="genai-prices")
    assert (Usage() + a + a).cost_source == "table"
    assert (a + b + a).cost_source == "table; genai-prices" and (a + b).cost_usd == 3.0


def test_the_override_table_still_agrees_with_the_installed_catalogue() -> None:
    """The overrides pin the default models' prices; a genai-prices release that disagrees makes
    this fail, so someone checks the providers' pages and moves PRICES_AS_OF."""
    from stagehand_py.llm import _pricing

    for name, pinned in _pricing._TABLE.items():
        provider = "anthropic" if name.startswith("claude") else "openai"
        catalogue, source = _pricing._catalogue_price(name, provider)
        assert catalogue == pinned, f"{name}: override {pinned} but {source} says {catalogue}"


def test_prices_are_read_without_any_network_access() -> None:
    """In a fresh interpreter with every socket connect refused and genai-prices' updater made to
    fail if built, pricing and a costed call still work: the catalogue comes from the package."""
    import subprocess
    import sys

    code = """
import socket
def refuse(*a, **k):
    raise AssertionError("network access during pricing")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
import genai_prices.update_prices as up
up.UpdatePrices.__init__ = refuse
import asyncio
from stagehand_py.llm import LLMClient, price_for
from stagehand_py.testing import FunctionLLM
assert price_for("google/gemini-2.5-flash").input_per_million > 0
client = LLMClient(FunctionLLM(lambda r: "ok", model_name="anthropic/claude-haiku-4-5"))
usage = asyncio.run(client.generate("hi")).usage
assert usage.cost_usd is not None and usage.cost_usd > 0, usage
print("priced offline:", usage.cost_source)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "priced offline: genai-prices" in done.stdout


def test_local_is_free_and_unknown_is_none_not_zero() -> None:
    assert price_for("local/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf") == ModelPrice(
        input_per_million=0, output_per_million=0, cached_input_per_million=0)
    assert price_for("openai/llama3.2", base_url="http://localhost:11434/v1").input_per_million == 0
    assert price_for("openai/qwen", base_url="http://127.0.0.1:8080/v1").input_per_million == 0
    # A remote OpenAI-compatible server bills by its own list: unknown.
    assert price_for("openai/gpt-4.1-mini", base_url="https://llm.example.com/v1") is None
    assert price_for("openai/some-new-model") is None
    assert price_for("function") is None
    assert price_for("mistral/mistral-large") is None


def test_cost_counts_cached_input_at_its_own_rate() -> None:
    # 1M input of which 400k cached, 100k output: 600k*0.40 + 400k*0.10 + 100k*1.60 = 0.24+0.04+0.16
    assert MINI.cost(input_tokens=1_000_000, output_tokens=100_000, cached_tokens=400_000) == pytest.approx(0.44)
    no_cache_rate = ModelPrice(input_per_million=1.0, output_per_million=2.0)
    assert no_cache_rate.cost(input_tokens=1_000_000, output_tokens=0, cached_tokens=500_000) == pytest.approx(1.0)


def test_sums_with_an_unknown_part_are_unknown() -> None:
    known, unknown = Usage(requests=1, cost_usd=0.5), Usage(requests=1, cost_usd=None)
    assert (known + known).cost_usd == 1.0
    assert (known + unknown).cost_usd is None
    assert ((known + known) - known).cost_usd == 0.5
    assert Usage().cost_usd == 0.0


async def test_each_call_and_each_purpose_carry_dollars() -> None:
    double = FunctionLLM(lambda request: {"title": "Dune"}, model_name="openai/gpt-4.1-mini")
    client = LLMClient(double)
    first = await client.generate("a" * 4000, purpose="extract", output=Title)
    usage = first.usage
    expected = MINI.cost(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)
    assert usage.input_tokens > 900 and usage.cost_usd == pytest.approx(expected) and usage.cost_usd > 0
    await client.generate("b" * 400, purpose="observe", output=Title)
    by_purpose = client.metrics.by_purpose
    assert by_purpose["extract"].cost_usd == pytest.approx(expected)
    assert client.metrics.total.cost_usd == pytest.approx(expected + by_purpose["observe"].cost_usd)
    assert client.metrics.as_dict()["total"]["cost_usd"] == pytest.approx(client.metrics.total.cost_usd)


async def test_unknown_model_reports_unknown_cost_and_a_price_fixes_it() -> None:
    client = LLMClient(FunctionLLM(lambda request: {"title": "Dune"}))  # model_name "function": not in the table
    result = await client.generate("hello", output=Title)
    assert result.usage.cost_usd is None and client.metrics.total.cost_usd is None
    priced = LLMClient(FunctionLLM(lambda request: {"title": "Dune"}), price=ModelPrice(input_per_million=10,
                                                                                       output_per_million=20))
    result = await priced.generate("hello", output=Title)
    assert result.usage.cost_usd == pytest.approx((result.usage.input_tokens * 10 + result.usage.output_tokens * 20) / 1e6)


async def test_user_price_overrides_the_table() -> None:
    mine = ModelPrice(input_per_million=100.0, output_per_million=0.0)
    client = LLMClient(FunctionLLM(lambda request: {"title": "x"}, model_name="openai/gpt-4.1-mini"), price=mine)
    result = await client.generate("c" * 400, output=Title)
    assert result.usage.cost_usd == pytest.approx(result.usage.input_tokens * 100 / 1e6)


async def test_a_model_that_reports_its_own_bill_is_believed() -> None:
    class Billing:
        model_name = "router/some-model"

        async def request(self, request):
            return ModelResponse(output={"title": "x"}, usage=Usage(input_tokens=10, output_tokens=2, cost_usd=0.0123))

    result = await LLMClient(Billing()).generate("hi", output=Title)
    assert result.usage.cost_usd == 0.0123


async def test_max_cost_stops_before_the_call_that_would_cross_it() -> None:
    calls: list[int] = []

    def answer(request):
        calls.append(1)
        return {"title": "x"}

    price = ModelPrice(input_per_million=1_000.0, output_per_million=1_000.0)  # $0.001 a token
    client = LLMClient(FunctionLLM(answer), price=price, usage_limits=UsageLimits(max_cost_usd=1.0))
    prompt = "p" * 1200  # ~300 tokens ~ $0.30 of input per call, plus the answer
    spent = []
    with pytest.raises(CostLimitExceededError) as caught:
        for _ in range(10):
            spent.append((await client.generate(prompt, output=Title)).usage.cost_usd)
    error = caught.value
    assert isinstance(error, UsageLimitExceededError)
    # Every call made stayed under the cap; the refused one was never sent.
    assert len(calls) == len(spent) >= 2
    assert client.metrics.total.cost_usd == pytest.approx(sum(spent)) and sum(spent) <= 1.0
    assert error.limit_usd == 1.0 and error.spent_usd == pytest.approx(sum(spent))
    assert error.spent_usd + error.next_estimate_usd > 1.0
    assert "max_cost_usd=1" in str(error) and f"${sum(spent):.6f}" in str(error)


async def test_control_a_higher_cap_lets_the_same_calls_through() -> None:
    price = ModelPrice(input_per_million=1_000.0, output_per_million=1_000.0)
    client = LLMClient(ScriptedLLM([{"title": "x"}] * 4), price=price, usage_limits=UsageLimits(max_cost_usd=10.0))
    for _ in range(4):
        await client.generate("p" * 1200, output=Title)
    assert client.metrics.total.requests == 4


async def test_max_cost_with_an_unknown_price_is_refused_up_front() -> None:
    with pytest.raises(ConfigurationError, match="price="):
        LLMClient(FunctionLLM(lambda request: {"title": "x"}), usage_limits=UsageLimits(max_cost_usd=1.0))
    with pytest.raises(ValueError):
        UsageLimits(max_cost_usd=-1)


async def test_an_act_and_an_agent_run_report_their_cost(page) -> None:
    from agent._script import AgentScript, call
    from operations._ops import element, find_id

    from stagehand_py import Action, Stagehand

    await page.set_content("<h1>Shop</h1><button onclick=\"this.textContent='Added'\">Add to cart</button>")
    model = FunctionLLM(lambda request: {"elements": [element(find_id(request, "button: Add to cart"))],
                                         "opens_options": False}, model_name="openai/gpt-4.1-mini")
    sh = Stagehand(page, model=model)
    result = await sh.act("add the item to the cart")
    assert result.success and result.usage.requests == 1
    assert result.usage.cost_usd == pytest.approx(sh.metrics.by_purpose["act"].cost_usd) and result.usage.cost_usd > 0
    # An Action run as given makes no model call and costs nothing.
    assert (await sh.act(Action(selector="h1", method="hover"))).usage.cost_usd == 0

    script = AgentScript([call("done", message="nothing to do")])
    agent_sh = Stagehand(page, model=LLMClient(script, price=MINI))
    run = await agent_sh.agent().execute("check the page", max_steps=3)
    assert run.usage.requests >= 1 and run.usage.cost_usd == pytest.approx(agent_sh.metrics.total.cost_usd)
    assert run.usage.cost_usd == pytest.approx(MINI.cost(input_tokens=run.usage.input_tokens,
                                                         output_tokens=run.usage.output_tokens))
