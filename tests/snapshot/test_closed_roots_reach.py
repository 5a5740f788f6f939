"""Every element the outline shows can be acted on: closed shadow roots inside iframes and
iframes inside closed shadow roots, same-site and cross-site, on a page that was loaded *before*
`Stagehand(page=page)` was created (the user's own page) and on a page Stagehand launched."""

from __future__ import annotations

import re

import pytest
from _browser import stagehand_beside

from stagehand_py import Action, Stagehand
from stagehand_py._actions import execute_action
from stagehand_py.llm._messages import message_text
from stagehand_py.testing import FunctionLLM

from .conftest import load


def _model(request):
    """Answers like a model reading the outline it was sent: observe picks the button the
    instruction names, extract lists every button and field the outline shows."""
    outline = "\n".join(message_text(m) for m in request.messages)
    if request.purpose == "observe":
        who = "cross" if "press the cross button" in outline else "same"
        found = re.search(rf"\[(\d+-\d+)\] button: Press {who}", outline)
        return {"elements": [{"element_id": found.group(1), "description": f"Press {who}", "method": "click", "arguments": []}]
                if found else []}
    return {"data": {"buttons": re.findall(r"\] button: (Press \w+)", outline),
                     "fields": re.findall(r"\] textbox: (Field \w+)", outline)}, "instruction_satisfied": True}


@pytest.fixture(params=["wrapped-after-load", "launched"])
async def loaded(request, context, server, launched_stagehand):
    if request.param == "launched":  # a context of its own in the session's launched Chromium
        async with stagehand_beside(launched_stagehand, model=FunctionLLM(_model)) as stagehand:
            await load(stagehand.page, server.url("closed_frames.html"))
            yield stagehand
        return
    page = await context.new_page()
    await load(page, server.url("closed_frames.html"))  # loaded first: our hooks were not there
    stagehand = Stagehand(page, model=FunctionLLM(_model))
    yield stagehand
    await stagehand.close()


def _id_of(tree: str, text: str) -> str:
    line = next(line for line in tree.split("\n") if text in line)
    return line.strip().split("]")[0][1:]


@pytest.mark.parametrize("who", ["same", "cross"])
async def test_click_a_button_in_a_closed_root_inside_an_iframe(loaded: Stagehand, who: str) -> None:
    snap = await loaded.snapshot()
    button = _id_of(snap.tree, f"button: Press {who}")
    result = await loaded.act(Action(selector=f"xpath={snap.xpath_map[button]}", description=f"button: Press {who}", method="click"))
    assert result.success, result
    assert f"button: Pressed {who}" in (await loaded.snapshot()).tree


@pytest.mark.parametrize("who", ["same", "cross"])
async def test_fill_an_input_in_an_iframe_inside_a_closed_root(loaded: Stagehand, who: str) -> None:
    snap = await loaded.snapshot()
    field = _id_of(snap.tree, f"textbox: Field {who}")
    action = Action(selector=f"xpath={snap.xpath_map[field]}", description=f"textbox: Field {who}", method="fill", arguments=[f"typed {who}"])
    result = await loaded.act(action)
    assert result.success, result
    assert f'textbox: Field {who} value="typed {who}"' in (await loaded.snapshot()).tree


@pytest.mark.parametrize("who", ["same", "cross"])
async def test_observe_then_act_on_a_button_in_a_closed_root_inside_an_iframe(loaded: Stagehand, who: str) -> None:
    """observe as the first call on the page (no snapshot before it): the model is shown the
    button inside the closed root inside the frame, and the action it returns runs."""
    [action] = await loaded.observe(f"press the {who} button")
    assert action.method == "click"
    assert (await loaded.act(action)).success
    assert f"button: Pressed {who}" in (await loaded.snapshot()).tree


async def test_extract_reads_every_closed_root_and_frame_combination(loaded: Stagehand) -> None:
    schema = {"type": "object", "properties": {"buttons": {"type": "array", "items": {"type": "string"}},
                                               "fields": {"type": "array", "items": {"type": "string"}}}}
    data = await loaded.extract("the buttons and fields", schema)
    assert sorted(data["buttons"]) == ["Press cross", "Press same"]
    assert sorted(data["fields"]) == ["Field cross", "Field same"]
    page_text = (await loaded.extract())["page_text"]  # no instruction: the outline itself, no model call
    assert all(f"{kind} {who}" in page_text for kind in ("Press", "Field") for who in ("same", "cross"))


async def test_without_a_snapshot_the_closed_root_is_reached(context, server) -> None:
    """On a page loaded before the Stagehand (so no hook saw the roots attached), a fresh
    Stagehand acts on a path into a closed root without taking a snapshot first: resolution
    finds the root over DevTools itself (it used to need the snapshot's hand-over)."""
    page = await context.new_page()
    await load(page, server.url("closed_frames.html"))
    async with Stagehand(page) as stagehand:
        snap = await stagehand.snapshot()
        path = snap.xpath_map[_id_of(snap.tree, "textbox: Field same")]
    await page.reload()
    await load(page, server.url("closed_frames.html"))
    async with Stagehand(page) as fresh:
        assert (await fresh.act(Action(selector=f"xpath={path}", method="fill", arguments=["x"]), timeout=10)).success


async def test_a_closed_root_attached_after_the_first_snapshot_is_found(loaded: Stagehand) -> None:
    """The document was looked into once; a custom element that arrives later with a closed
    root makes the engine look again, so its content shows and can be acted on."""
    first = await loaded.snapshot()
    assert "Late button" not in first.tree
    await loaded.page.evaluate("""() => {
        customElements.define('late-widget', class extends HTMLElement {
            constructor() {
                super();
                const root = this.attachShadow({ mode: 'closed' });
                root.innerHTML = '<button>Late button</button>';
                root.querySelector('button').onclick = (e) => { e.target.textContent = 'Late pressed'; };
            }
        });
        document.body.appendChild(document.createElement('late-widget'));
    }""")
    snap = await loaded.snapshot()
    button = _id_of(snap.tree, "button: Late button")
    assert (await loaded.act(Action(selector=f"xpath={snap.xpath_map[button]}", method="click"))).success
    assert "button: Late pressed" in (await loaded.snapshot()).tree


async def test_a_closed_root_attached_while_the_act_waits_is_found(loaded: Stagehand) -> None:
    """Resolution polls: a closed root attached after the act started (here after the first
    look over DevTools found none) is opened on a later look, and the act lands in it."""
    await loaded.page.evaluate("""() => {
        const host = document.createElement('slow-widget');
        document.body.appendChild(host);
        setTimeout(() => {
            const root = host.attachShadow({ mode: 'closed' });
            root.innerHTML = '<button>Slow button</button>';
            root.querySelector('button').onclick = (e) => { e.target.textContent = 'Slow pressed'; };
        }, 1500);
    }""")
    path = "/html[1]/body[1]/slow-widget[1]//button[1]"
    # execute_action: the whole 20 s bound is for resolution (act's would be the 5 s settle time).
    await execute_action(loaded.page, Action(selector=f"xpath={path}", method="click"), timeout=20)
    assert "button: Slow pressed" in (await loaded.snapshot()).tree
