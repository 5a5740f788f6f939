"""Agent runs that replay: stored, replayed with no model, healed step by step, checked for where they end.

A real page on 127.0.0.1 (both page kinds), a scripted model whose calls are counted: the first run
takes model calls; the replay takes none; with the button renamed, exactly one (the heal). The shop app
(:class:`Shop`) also serves the orders pages of test_export.py, where runs are exported and run as tests.
"""

from __future__ import annotations

import html
import re
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
from _server import Response

from stagehand_py import (
    Action,
    ActionFailedError,
    AgentError,
    AgentResult,
    ElementIdentity,
    InvalidArgumentError,
    TestDoubleError,
)
from stagehand_py._prompts.choice import NO_CHOICE, choice_enum
from stagehand_py.agent._recording import load_recording
from stagehand_py.llm import LLMClient
from stagehand_py.testing import FunctionLLM, capture_requests

from . import test_agent_tabs
from ._script import AgentScript, call

ROOT = Path(__file__).resolve().parent.parent.parent
#: Both page kinds: a page the test launched and wrapped (Stagehand(page)), and Stagehand.launch().
make = test_agent_tabs.make
SECRET = "4"  # the quantity is a variable: only %qty% may be stored
COUPON = "SPRING-2731-XQ"  # the orders run's variable: the orders page and its URL show it
STATE = {"label": "Add to cart", "heading": "Tiny shop"}

SHOP = """<!doctype html><title>Shop</title>{banner}<h1>{heading}</h1>
<label>Quantity <input id=qty></label>
<button id=add onclick="document.getElementById('cart').textContent = 'Cart: ' + document.getElementById('qty').value + ' items'">{label}</button>
<p id=cart>Cart: 0 items</p><p>Delivery: Tuesday</p>
<label>Coupon <input id=coupon></label>
<a href=/replay/orders onclick="this.href = '/replay/orders?page=1&coupon=' + encodeURIComponent(document.getElementById('coupon').value) + '&sid={sid}'">Your orders</a>
<a href=/replay/help>{help}</a>"""

ORDERS_PAGE = """<!doctype html><title>{what}, page {page} of 2</title>{banner}
<nav><a href=/replay/shop>Shop</a> <a href=/replay/help>{help}</a></nav>
<h1>{heading}</h1><p>Coupon {coupon} applied</p>
<table><tr><th>Order</th><th>Total</th></tr>{rows}</table>{next}"""
ORDERS = {1: [("A-1001", "$12.50"), ("A-1002", "$40.00")], 2: [("A-1003", "$27.00"), ("A-1004", "$8.75")]}


@dataclass(frozen=True)
class Shop:
    """The shop app as recorded, or changed: where "Next page" leads, a total, a banner, a link's name."""

    next_path: str = "/replay/orders"
    next_page: int = 2
    next_label: str = "Next page"
    totals: tuple[tuple[str, str], ...] = ()
    banner: str = ""
    help_label: str = "Help"

    def routes(self, server) -> list:
        sid = lambda: secrets.token_hex(16)  # noqa: E731  # a session id: new on every page, left out of the kept URL

        def shop(r):
            return Response.html(SHOP.format(banner=self.banner, heading=STATE["heading"], label=STATE["label"],
                                             sid=sid(), help=self.help_label))

        def orders(r, what="Orders", heading="Your orders"):
            page, coupon = int(r.query.get("page", "1")), r.query.get("coupon", "")
            totals = dict(self.totals)
            rows = "".join(f"<tr><td>{i}</td><td>{totals.get(i, t)}</td></tr>" for i, t in ORDERS[page])
            later = (f'<a href="{self.next_path}?page={self.next_page}&coupon={quote(coupon)}&sid={sid()}'
                     f'&_={time.time_ns() // 1_000_000}">{self.next_label}</a>') if page == 1 else ""
            return Response.html(ORDERS_PAGE.format(what=what, heading=heading, page=page, banner=self.banner,
                                                    help=self.help_label, coupon=html.escape(coupon), rows=rows,
                                                    next=later))

        def archive(r):  # the same rows, on another page
            return orders(r, what="Archived orders", heading="Archived orders")

        return [server.route("/replay/shop", shop), server.route("/replay/orders", orders),
                server.route("/replay/archive", archive),
                server.route("/replay/help", lambda r: Response.html("<title>Help</title><h1>Help</h1>"))]


@pytest.fixture
def shop(server):
    STATE.update(label="Add to cart", heading="Tiny shop")
    routes = Shop().routes(server)
    yield server
    for route in routes:
        route.remove()


TASK = "Put %qty% items in the cart and report the delivery day"
SCHEMA = {"type": "object", "properties": {"delivery": {"type": "string"}}, "required": ["delivery"]}


def first_run_model() -> AgentScript:
    return AgentScript([
        lambda s: call("act", element_id=s.id("textbox", "Quantity"), method="fill", arguments=["%qty%"]),
        lambda s: call("act", element_id=s.id("button", "Add to cart")),
        call("extract", instruction="the delivery day", schema=SCHEMA),
        call("done", message="added", output={"day": "Tuesday"}),
    ], others={"extract": lambda r: {"data": {"delivery": "Tuesday"}, "instruction_satisfied": True}})


def heal_model(calls: list[str]) -> AgentScript:
    def heal(request):
        calls.append(request.purpose)
        text = "\n".join(p.text for m in request.messages for p in m.content if hasattr(p, "text"))
        line = next(line for line in text.splitlines() if "button: Add to basket" in line)
        eid = line.strip().split("]")[0].lstrip("[")
        return {"elements": [{"element_id": eid, "description": "add button", "method": "click", "arguments": []}]}
    return AgentScript([], others={"heal": heal})


async def _run(make, cache: Path, shop, model, **options):
    sh = await make(model=model, cache_dir=cache)
    await sh.page.goto(shop.url("replay/shop"))
    with capture_requests() as calls:
        result = await sh.agent().execute(TASK, variables={"qty": SECRET}, max_steps=8, **options)
    return sh, result, calls


@pytest.fixture(scope="module")
def first_runs() -> dict[str, tuple[Path, AgentResult]]:
    """The first run of the shop task per page kind (its cache folder, its result), made by the first test that asks."""
    return {}


@pytest.fixture
async def recorded(request, make, shop, tmp_path, tmp_path_factory, first_runs) -> tuple[Path, AgentResult]:
    """The shop task's first run on this test's page kind: this test's own cache folder holding the stored run
    (a copy: replays and heals rewrite it), and the run's result. Recorded once per page kind: the page and the
    scripted model give the same run every time, and a browser launch and four steps per test were the file's
    largest repeated setup. The first test (test_a_run_replays_...) still records and checks its own."""
    kind = request.node.callspec.params["make"]
    if kind not in first_runs:
        source = tmp_path_factory.mktemp(f"first-run-{kind}") / "cache"
        _, first, _ = await _run(make, source, shop, first_run_model())
        assert first.success and first.replay is None, first.message
        first_runs[kind] = (source, first)
    source, first = first_runs[kind]
    shutil.copytree(source, tmp_path / "cache")
    return tmp_path / "cache", first


async def test_a_run_replays_with_no_model_and_heals_only_a_renamed_button(make, shop, tmp_path):
    cache = tmp_path / "cache"
    sh, first, calls = await _run(make, cache, shop, first_run_model())
    assert first.success and first.replay is None and len(calls) == 6  # 4 agent steps, 1 extract, the verdict on done
    assert await sh.page.inner_text("#cart") == "Cart: 4 items"
    [stored] = list((cache / "agent-runs").iterdir())
    text = stored.read_text()
    assert "%qty%" in text and f'"{SECRET}"' not in text  # placeholders only, never the value
    recording = load_recording(stored)
    assert [s.kind for s in recording.steps] == ["act", "act", "extract"]
    assert (recording.steps[1].role, recording.steps[1].name) == ("button", "Add to cart")

    # Same task, start URL and variable names: replayed, zero model calls, same outcome.
    sh, again, calls = await _run(make, cache, shop, AgentScript([]))
    assert calls == [] and again.success and again.status == "done"
    assert again.replay is not None and again.replay.replayed == [0, 1, 2] and not again.replay.fell_back
    assert again.output == {"day": "Tuesday"}
    assert await sh.page.inner_text("#cart") == "Cart: 4 items"

    # The button renamed: that step heals with one model call; the others still replay.
    STATE["label"] = "Add to basket"
    purposes: list[str] = []
    sh, healed, calls = await _run(make, cache, shop, heal_model(purposes))
    assert purposes == ["heal"] and len(calls) == 1, [c.request.purpose for c in calls]
    assert healed.success and healed.replay is not None
    assert healed.replay.healed == [1] and healed.replay.replayed == [0, 2]
    assert "Add to cart" in healed.replay.steps[1].detail and "Add to basket" in healed.replay.steps[1].detail
    assert await sh.page.inner_text("#cart") == "Cart: 4 items"
    # The stored run now holds the healed step: the next replay needs no model.
    assert load_recording(stored).steps[1].name == "Add to basket"
    sh, after, calls = await _run(make, cache, shop, AgentScript([]))
    assert calls == [] and after.replay is not None and after.replay.replayed == [0, 1, 2]


async def test_a_replay_that_cannot_heal_falls_back_to_the_live_agent(make, shop, recorded):
    cache, _ = recorded
    STATE["label"] = "Add to basket"
    live = AgentScript([
        lambda s: call("act", element_id=s.id("button", "Add to basket")),
        call("done", message="added", output={"day": "Tuesday"}),
    ], others={"heal": lambda r: {"elements": []}})  # the heal finds nothing
    sh, result, calls = await _run(make, cache, shop, live)
    assert result.success and result.replay is not None and result.replay.fell_back
    assert "step 2" in result.replay.reason and result.replay.replayed == [0]
    assert [s.status for s in result.replay.steps][-1] == "fresh"
    assert [c.request.purpose for c in calls] == ["heal", "agent", "agent", "agent_verdict"]
    assert await sh.page.inner_text("#cart") == "Cart: 4 items"


async def test_replay_can_be_turned_off_per_call(make, shop, recorded):
    cache, _ = recorded
    # replay=False: the live agent asks the model, whose script has no steps; the run's own time budget also "ran
    # out" in its message, so the match names the script and the cause is the double's.
    ran_out = r"TestDoubleError: the script ran out at agent step 1$"
    assert not re.search(ran_out, "stopped: the time budget ran out; returning the data collected so far")
    with pytest.raises(AgentError, match=ran_out) as caught:
        await _run(make, cache, shop, AgentScript([]), replay=False)
    assert isinstance(caught.value.__cause__, TestDoubleError)
    sh = await make(model=AgentScript([]))
    with pytest.raises(InvalidArgumentError, match="cache directory"):
        await sh.agent().execute(TASK, replay=True)


async def test_a_replay_that_ends_elsewhere_falls_back_to_the_live_agent(make, shop, recorded):
    # Every step's element is unchanged, so every step replays; the page it ends on is not the one recorded.
    # (The control is the first test: the same replay on the page as recorded does not fall back.)
    cache, _ = recorded
    STATE["heading"] = "Tiny shop (closed)"
    live = AgentScript([call("done", message="the shop is closed")])
    _, result, calls = await _run(make, cache, shop, live)
    assert result.replay is not None and result.replay.fell_back and result.replay.replayed == [0, 1, 2]
    assert result.replay.outcome_differences == ["main heading: expected 'Tiny shop'; the page shows 'Tiny shop (closed)'"]
    assert "the outcome differs from the recorded run: main heading" in result.replay.reason
    assert [c.request.purpose for c in calls] == ["agent", "agent_verdict"] and result.message == "the shop is closed"


async def test_act_with_element_refuses_another_element_at_the_path(make, shop):
    STATE["label"] = "Delete account"
    sh = await make(self_heal=False)
    await sh.page.goto(shop.url("replay/shop"))
    button = Action(selector="xpath=/html[1]/body[1]/button[1]", method="click")
    await sh.page.fill("#qty", "3")
    # Control: the Action alone clicks whatever is at the path now.
    await sh.act(button)
    assert await sh.page.inner_text("#cart") == "Cart: 3 items"
    await sh.page.fill("#qty", "5")
    with pytest.raises(ActionFailedError, match="Add to cart"):
        await sh.act(button, element=ElementIdentity(role="button", name="Add to cart"))
    assert await sh.page.inner_text("#cart") == "Cart: 3 items"  # nothing was clicked
    with pytest.raises(InvalidArgumentError, match="ElementIdentity"):
        await sh.act("click the button", element=ElementIdentity(role="button", name="Add to cart"))


async def test_a_heal_onto_another_role_is_asked_again(make, shop, recorded):
    cache, _ = recorded
    STATE["label"] = "Add to basket"
    answered: list[str] = []

    def heal(request):  # first the heading (what the embedded model did), then the button
        text = "\n".join(p.text for m in request.messages for p in m.content if hasattr(p, "text"))
        wanted = "heading: Tiny shop" if not answered else "button: Add to basket"
        answered.append(wanted)
        line = next(line for line in text.splitlines() if wanted in line)
        eid = line.strip().split("]")[0].lstrip("[")
        return {"elements": [{"element_id": eid, "description": "add", "method": "click", "arguments": []}]}

    sh, result, calls = await _run(make, cache, shop, AgentScript([], others={"heal": heal}))
    assert answered == ["heading: Tiny shop", "button: Add to basket"]
    assert [c.request.purpose for c in calls] == ["heal", "heal"]  # one heal: its answer and the re-ask
    assert result.replay is not None and result.replay.healed == [1] and not result.replay.fell_back
    assert await sh.page.inner_text("#cart") == f"Cart: {SECRET} items"


SIGN_IN = """<!doctype html><title>Sign in</title><h1>Sign in</h1>
<label>Username <input id=user></label>
<button type=button disabled>Reset password</button>
<button id=go onclick="document.getElementById('out').textContent = 'Signed in as ' + document.getElementById('user').value">{label}</button>
<p id=out>Not signed in</p>"""


async def test_a_choice_mode_heal_offers_only_enabled_elements_of_the_recorded_role(make, server, tmp_path):
    # A choice-mode heal used to offer every actionable line of the form, and a small model leans to the first
    # ones (the username box, the disabled "Reset password" button: right role, cannot be clicked). Scripted
    # here as a model that always takes the first choice offered; without the filter it never heals.
    label = {"text": "Sign in"}
    route = server.route("/replay/sign-in", lambda r: Response.html(SIGN_IN.replace("{label}", label["text"])))
    task, cache = "Sign in as %user%", tmp_path / "cache"
    try:
        recorder = AgentScript([
            lambda s: call("act", element_id=s.id("textbox", "Username"), method="fill", arguments=["%user%"]),
            lambda s: call("act", element_id=s.id("button", "Sign in")),
            call("done", message="signed in"),
        ])
        sh = await make(model=recorder, cache_dir=cache)
        await sh.page.goto(server.url("replay/sign-in"))
        assert (await sh.agent().execute(task, variables={"user": "ada"})).success
        label["text"] = "Log in"
        offered: list[list[str]] = []

        def first_choice(request):
            assert request.purpose == "heal", request.purpose
            choices = choice_enum(request.output_schema)
            offered.append(choices)
            return {"elements": [{"element": choices[0], "method": "click", "arguments": []}]}

        sh = await make(model=LLMClient(FunctionLLM(first_choice), choice_mode=True), cache_dir=cache)
        await sh.page.goto(server.url("replay/sign-in"))
        result = await sh.agent().execute(task, variables={"user": "ada"})
    finally:
        route.remove()
    assert len(offered) == 1 and [c.split(" [")[0] for c in offered[0]] == ["button: Log in", NO_CHOICE], offered
    assert result.success and result.replay is not None and not result.replay.fell_back, result.message
    assert result.replay.replayed == [0] and result.replay.healed == [1]
    assert await sh.page.inner_text("#out") == "Signed in as ada"
