"""Agent runs that replay: stored, replayed with no model, healed step by step, exported.

A real page on 127.0.0.1 (both page kinds), a scripted model whose calls are counted: the first run
takes model calls; the replay takes none; with the button renamed, exactly one (the heal).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _server import Response

from stagehand_py import AgentError, InvalidArgumentError
from stagehand_py.agent._recording import load_recording
from stagehand_py.testing import capture_requests

from . import test_agent_tabs
from ._script import AgentScript, call

ROOT = Path(__file__).resolve().parent.parent.parent
#: Both page kinds: a page the test launched and wrapped (Stagehand(page)), and Stagehand.launch().
make = test_agent_tabs.make
SECRET = "4"  # the quantity is a variable: only %qty% may be stored
STATE = {"label": "Add to cart"}

SHOP = """<!doctype html><title>Shop</title><h1>Tiny shop</h1>
<label>Quantity <input id=qty></label>
<button id=add onclick="document.getElementById('cart').textContent = 'Cart: ' + document.getElementById('qty').value + ' items'">{label}</button>
<p id=cart>Cart: 0 items</p><p>Delivery: Tuesday</p>"""


@pytest.fixture
def shop(server):
    STATE["label"] = "Add to cart"
    route = server.route("/replay/shop", lambda r: Response.html(SHOP.replace("{label}", STATE["label"])))
    yield server
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


async def test_a_run_replays_with_no_model_and_heals_only_a_renamed_button(make, shop, tmp_path):
    cache = tmp_path / "cache"
    sh, first, calls = await _run(make, cache, shop, first_run_model())
    assert first.success and first.replay is None and len(calls) == 5  # 4 agent steps + 1 extract
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


async def test_a_replay_that_cannot_heal_falls_back_to_the_live_agent(make, shop, tmp_path):
    cache = tmp_path / "cache"
    await _run(make, cache, shop, first_run_model())
    STATE["label"] = "Add to basket"
    live = AgentScript([
        lambda s: call("act", element_id=s.id("button", "Add to basket")),
        call("done", message="added", output={"day": "Tuesday"}),
    ], others={"heal": lambda r: {"elements": []}})  # the heal finds nothing
    sh, result, calls = await _run(make, cache, shop, live)
    assert result.success and result.replay is not None and result.replay.fell_back
    assert "step 2" in result.replay.reason and result.replay.replayed == [0]
    assert [s.status for s in result.replay.steps][-1] == "fresh"
    assert [c.request.purpose for c in calls] == ["heal", "agent", "agent"]
    assert await sh.page.inner_text("#cart") == "Cart: 4 items"


async def test_replay_can_be_turned_off_per_call(make, shop, tmp_path):
    cache = tmp_path / "cache"
    await _run(make, cache, shop, first_run_model())
    with pytest.raises(AgentError, match="ran out"):  # replay=False: the live agent asks the model (it has no steps)
        await _run(make, cache, shop, AgentScript([]), replay=False)
    sh = await make(model=AgentScript([]))
    with pytest.raises(InvalidArgumentError, match="cache directory"):
        await sh.agent().execute(TASK, replay=True)
