"""The judge (sh.evaluate and the agent's self-check), user tools, and event streaming."""

from __future__ import annotations

import pytest

from stagehand_py import Stagehand
from stagehand_py.agent import tool_from_function
from stagehand_py.llm import ImagePart
from stagehand_py.testing import FunctionLLM

from ._script import AgentScript, call, page_verdict


def judge_from_page(request):
    text = request.messages[-1].content[0].text
    assert any(isinstance(p, ImagePart) for p in request.messages[-1].content) == ("screenshot" in request.messages[0].content[0].text)
    if "Question: Is this page 3?" in text:
        return {"verdict": "yes" if "heading: Page 3" in text else "no", "reasoning": "the heading says so"}
    return {"verdict": "invalid", "reasoning": "not a yes/no question about this page"}


async def test_evaluate_yes_no_invalid(page, server):
    sh = Stagehand(page, model=FunctionLLM(judge_from_page))
    await page.goto(server.url("site/page3.html"))
    verdict = await sh.evaluate("Is this page 3?")
    assert verdict.verdict == "yes" and verdict and verdict.reasoning
    await page.goto(server.url("site/page2.html"))
    assert not await sh.evaluate("Is this page 3?", screenshot=False)
    odd = await sh.evaluate("What colour is the sky?")
    assert odd.verdict == "invalid" and not odd
    with pytest.raises(ValueError):
        await sh.evaluate(" ")


async def test_self_check_bounces_an_early_done(page, server):
    await page.goto(server.url("site/index.html"))
    script = AgentScript(
        [call("done", message="there"), lambda s: call("act", element_id=s.id("link", "Next")),
         lambda s: call("act", element_id=s.id("link", "Next")), call("done", message="there")],
        others={"agent_verdict": page_verdict(lambda line: "heading: Page 3" in line)},
    )
    result = await Stagehand(page, model=script).agent(self_check=True).execute("Go to page 3", max_steps=6)
    assert result.status == "done"
    assert not result.steps[0].ok and result.steps[0].result.startswith("not verified: verdict: no")
    assert "done was not accepted" in script.seen[1].text  # the reason, at the model's next step
    assert [(c.step, c.check) for c in result.checks if c.check == "verdict"] == [(1, "verdict"), (4, "verdict")]
    assert result.checks[-1].passed and "heading: Page 3" in result.checks[-1].evidence
    assert page.url.endswith("site/page3.html")


async def test_user_tools_pure_and_browser(page, server):
    await page.goto(server.url("site/page2.html"))
    calls = []

    def lookup_price(sku: str, qty: int = 1) -> dict:
        """Price of a product by SKU."""
        calls.append((sku, qty))
        return {"sku": sku, "total": 9.5 * qty}

    async def page_heading(stagehand: Stagehand) -> str:
        """The page's main heading."""
        return await stagehand.page.inner_text("h1")

    script = AgentScript([
        call("lookup_price", sku="A-1", qty=2),
        call("page_heading"),
        call("done", message="ok"),
    ])
    agent = Stagehand(page, model=script).agent(tools=[lookup_price, page_heading])
    result = await agent.execute("Price A-1", max_steps=5)
    assert result.status == "done" and calls == [("A-1", 2)]
    assert {"lookup_price", "page_heading", "act", "done"} <= set(script.seen[0].tool_names)
    assert "lookup_price: Price of a product by SKU." in script.seen[0].system
    assert '"total": 19.0' in script.seen[1].text and "Page 2" in script.seen[2].text
    assert tool_from_function(lookup_price).browser is False and tool_from_function(page_heading).browser is True
    with pytest.raises(ValueError, match="annotation"):
        tool_from_function(lambda x: x, name="untyped")
    with pytest.raises(ValueError, match="built-in"):
        tool_from_function(lookup_price, name="done")


async def test_stream_yields_events_then_the_result(page, server):
    await page.goto(server.url("site/index.html"))
    script = AgentScript([call("think", thought="plan"), call("done", message="ok")])
    agent = Stagehand(page, model=script).agent()
    events = [e async for e in agent.stream("Think once", max_steps=10)]
    assert [e.type for e in events] == [
        "step_started", "model_usage", "tool_call", "tool_result",
        "step_started", "model_usage", "tool_call", "tool_result", "checkpoint", "finished",
    ]
    assert events[-1].result is not None and events[-1].result.status == "done"
    assert [e.step for e in events if e.type == "step_started"] == [1, 2]
