"""Validate, then act, on a page that swaps the element: observe proposes "Save"; before the act
the page puts a "Delete account" button at the same place. act(action) must not click it. The
control runs the same action through the bare executor, which has no identity check, and the
page's account is deleted."""

from __future__ import annotations

import pytest

from stagehand_py import ActionFailedError, ElementNotFoundError, Stagehand
from stagehand_py._actions import execute_action
from stagehand_py.testing import FunctionLLM

PAGE = """<!doctype html><main><h1>Profile</h1><div id=slot><button onclick="document.title='saved'">Save</button></div></main>"""
SWAP = """() => { document.getElementById('slot').innerHTML =
    "<button onclick=\\"document.title='deleted'\\">Delete account</button>"; }"""


def _pick_save(request) -> dict:
    text = "\n".join(str(m.content) for m in request.messages)
    import re

    m = re.search(r"\[(\d+-\d+)\] button: Save", text)
    return {"elements": [{"element_id": m.group(1), "description": "button: Save", "method": "click", "arguments": []}]} if m \
        else {"elements": []}


@pytest.mark.parametrize("self_heal", [False, True], ids=["refuses", "heals-or-refuses"])
async def test_act_never_clicks_an_element_swapped_in_after_observe(page, self_heal: bool) -> None:
    await page.set_content(PAGE)
    sh = Stagehand(page, model=FunctionLLM(_pick_save), self_heal=self_heal)
    [action] = await sh.observe("save the profile")
    await page.evaluate(SWAP)
    with pytest.raises((ActionFailedError, ElementNotFoundError), match="Save"):
        await sh.act(action)
    assert await page.title() == ""  # nothing was clicked


async def test_an_unchanged_element_is_acted_on(page) -> None:
    await page.set_content(PAGE)
    sh = Stagehand(page, model=FunctionLLM(_pick_save))
    [action] = await sh.observe("save the profile")
    assert (await sh.act(action)).success and await page.title() == "saved"


async def test_control_the_bare_executor_clicks_the_swapped_element(page) -> None:
    await page.set_content(PAGE)
    sh = Stagehand(page, model=FunctionLLM(_pick_save))
    [action] = await sh.observe("save the profile")
    await page.evaluate(SWAP)
    await execute_action(page, action)
    assert await page.title() == "deleted"


async def test_act_instruction_does_not_click_what_the_page_swapped_in_while_the_model_thought(page, server) -> None:
    """act("...") plans on a snapshot, then acts: a page that swaps the element while the model
    answers gets a typed error, not a click. No timing: the model's answer waits until the page
    has swapped (the page long-polls the server, which the model releases)."""
    import threading

    from _server import Response

    release, swapped = threading.Event(), threading.Event()

    def wait_for_model(req) -> Response:
        release.wait(30)
        return Response.json({})

    def page_swapped(req) -> Response:
        swapped.set()
        return Response.json({})

    def pick_while_the_page_swaps(request) -> dict:
        answer = {**_pick_save(request), "opens_options": False}
        release.set()  # now the page swaps the button ...
        assert swapped.wait(30)  # ... and the model answers only after it did
        return answer

    with server.route("/model-thinking", wait_for_model), server.route("/swapped", page_swapped):
        await page.goto(server.url("index.html"))
        await page.set_content(PAGE + f"""<script>fetch('{server.url("model-thinking")}').then(() => {{
            ({SWAP})(); fetch('{server.url("swapped")}'); }});</script>""")
        sh = Stagehand(page, model=FunctionLLM(pick_while_the_page_swaps), self_heal=False)
        with pytest.raises(ActionFailedError, match="Save"):
            await sh.act("save the profile")
    assert swapped.is_set() and await page.title() == ""
