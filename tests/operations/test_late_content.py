"""Late content: what a page renders after ``load`` (a timer at 1.5 s and 4 s, a fetch answered
at 2.5 s) is found by observe, act and extract, which wait for it within ``dom_settle_timeout``;
what never comes ends in the normal "not found" result, saying how long it waited.

Each verb has its own page. The test of what never comes runs the three at once; the test of
late content runs them one after another (at once, on three wrapped pages of one context, the
fetched offer was missed in about half the runs: an open finding, not yet explained).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re

import pytest_asyncio
from _browser import new_stagehand_of_kind
from _server import Response

from stagehand_py.testing import FunctionLLM

from ._ops import first_user

_OFFERS = """<!DOCTYPE html><html><head><title>Deals</title></head><body><h1>Deals</h1>
<main id="root"><p>Loading deals…</p></main>
<script>
  const root = document.getElementById("root");
  window.clicks = {};
  function offer(name, price) {
    const button = document.createElement("button");
    button.textContent = name + " offer";
    button.onclick = () => { window.clicks[name] = (window.clicks[name] || 0) + 1; };
    const text = document.createElement("p");
    text.textContent = name + " offer costs " + price;
    root.append(button, text);
  }
  %s
</script></body></html>"""
LATE = _OFFERS % """
  setTimeout(() => offer("Early", "$15"), 1500);
  setTimeout(() => offer("Late", "$40"), 4000);
  fetch("/slow?ms=2500").then((r) => r.json()).then((d) => offer("Fetched", "$" + d.items.length));"""
NEVER = _OFFERS % "/* the deals never come */"
NAMES = ("Early", "Fetched", "Late")
PRICE = {"type": "object", "properties": {"price": {"type": ["string", "null"]}}, "required": ["price"]}


def good_model(request):
    """Answers as a good model would: the named offer when the outline shows it, else nothing."""
    user = first_user(request)
    name = next(n for n in NAMES if f"{n} offer" in user.split("Instruction:", 1)[1].split("\n", 1)[0])
    if request.purpose == "extract":
        m = re.search(rf"StaticText: {name} offer costs (\S+)", user)
        return {"data": {"price": m.group(1) if m else None}, "instruction_satisfied": bool(m)}
    m = re.search(rf"\[(\d+-\d+)\] button: {name} offer", user)
    elements = [{"element_id": m.group(1), "description": f"{name} offer", "method": "click", "arguments": []}] if m else []
    return {"elements": elements, "opens_options": False} if request.purpose == "act" else {"elements": elements}


@pytest_asyncio.fixture(loop_scope="session")
async def make_stagehand(page_path, context, launched_stagehand):
    """The conftest's ``make_stagehand``, but a launched Stagehand's page is a context of its own in
    the session's launched Chromium (``_browser.stagehand_beside``): eight Chromium launches a
    run, seconds each on loaded cores, that nothing here is about."""
    async with contextlib.AsyncExitStack() as made:
        yield lambda **options: new_stagehand_of_kind(made, page_path, context, launched_stagehand, **options)


_pages = itertools.count()


async def _open(make_stagehand, server, html: str, **options):
    sh = await make_stagehand(model=FunctionLLM(good_model), **options)
    path = f"deals-{next(_pages)}.html"  # one route per page: the verbs run concurrently
    with server.route(f"/{path}", lambda req: Response.html(html)):
        await sh.page.goto(server.url(path))
    return sh


async def _observe_each(make_stagehand, server) -> list[list[str]]:
    sh = await _open(make_stagehand, server, LATE)
    return [[a.description for a in await sh.observe(f"the {name} offer button")] for name in NAMES]


async def _act_each(make_stagehand, server) -> tuple[list, dict]:
    sh = await _open(make_stagehand, server, LATE)
    done = [await sh.act(f"click the {name} offer button") for name in NAMES]
    return done, await sh.page.evaluate("window.clicks")


async def _extract_each(make_stagehand, server) -> list[str | None]:
    sh = await _open(make_stagehand, server, LATE)
    return [(await sh.extract(f"the price of the {name} offer", PRICE))["price"] for name in NAMES]


async def test_content_rendered_late_is_found_by_observe_act_and_extract(make_stagehand, server):
    # One verb at a time: with three wrapped pages of one context running at once, the fetched
    # offer was missed in about half the runs (by whichever verb); see the issue-21 closing note.
    observed = await _observe_each(make_stagehand, server)
    acted, clicks = await _act_each(make_stagehand, server)
    prices = await _extract_each(make_stagehand, server)
    assert observed == [["Early offer"], ["Fetched offer"], ["Late offer"]]
    assert [r.success for r in acted] == [True, True, True] and set(clicks) == set(NAMES)
    # One click each. (A click slower than self-heal's 2 s probe on a loaded machine is healed
    # and so clicked again: that is the heal's doing, reported by ActResult.healed.)
    assert all(clicks[name] == 1 or result.healed for name, result in zip(NAMES, acted, strict=True))
    assert prices == ["$15", "$3", "$40"]


async def test_content_that_never_comes_ends_in_not_found_naming_the_wait(make_stagehand, server):
    async def observe():
        sh = await _open(make_stagehand, server, NEVER)
        return await sh.observe("the Late offer button")

    async def act():
        sh = await _open(make_stagehand, server, NEVER)
        return await sh.act("click the Late offer button")

    async def extract():
        sh = await _open(make_stagehand, server, NEVER)
        return await sh.extract("the price of the Late offer", PRICE)

    observed, result, data = await asyncio.gather(observe(), act(), extract())
    assert observed == [] and data == {"price": None}
    assert not result.success and result.actions == []
    assert result.waited > 0 and re.search(r"after waiting \d+\.\d s for the page to change", result.message)


async def test_control_without_the_wait_the_late_content_is_missed(make_stagehand, server):
    """The same page and model with a 1 s settle window: the 4 s offer is not there yet (so the
    test above finds it only by waiting). A page without scripts is not waited for at all."""
    sh = await _open(make_stagehand, server, LATE, dom_settle_timeout=1.0)
    assert await sh.observe("the Late offer button") == []
    with server.route("/static-deals.html", lambda req: Response.html("<h1>Deals</h1><p>No offers today.</p>")):
        await sh.page.goto(server.url("static-deals.html"))
    result = await sh.act("click the Late offer button")
    assert not result.success and result.waited == 0.0 and "waiting" not in result.message


def _agent_call(tool: str, **args) -> dict:
    return {"evaluation_previous_step": "ok", "memory": "", "next_goal": f"use {tool}", "action": {"tool": tool, "args": args}}


async def test_the_agent_sees_not_found_after_waiting_as_an_observation(make_stagehand, server):
    """The agent's act tool turns "nothing matching after waiting" into a step result the model
    reads (and can act on), not a crash."""
    steps = iter([_agent_call("act", instruction="click the Late offer button"),
                  _agent_call("done", message="no offer to click")])

    def model(request):
        return next(steps) if request.purpose == "agent" else good_model(request)

    sh = await make_stagehand(model=FunctionLLM(model))
    with server.route("/never-agent.html", lambda req: Response.html(NEVER)):
        await sh.page.goto(server.url("never-agent.html"))
    result = await sh.agent().execute("click the late offer", max_steps=3)
    act_step = result.steps[0]
    assert act_step.tool == "act" and not act_step.ok
    assert re.search(r"No element on the page can carry out .*after waiting \d+\.\d s", act_step.result)
    assert result.status == "done"
