"""The agent's act tool checks the element too: the agent picks "Save" from its outline, and
while the model answers the page puts a "Delete account" button at the same place. The act must
fail (the agent is told), never click it. The control lets the page keep its "Save" button and
the same step clicks it, so the step does act when nothing was swapped. (Before the check, the
swapped run clicked "Delete account": the test failed.)"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest
from _server import Response

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "agent"))
from _script import AgentScript, call  # noqa: E402  (tests/agent/_script.py: the scripted model)

PAGE = """<!doctype html><title>Profile</title><main><h1>Profile</h1><div id=slot>
<button onclick="document.title='saved'">Save</button></div></main>"""
SWAP = """document.getElementById('slot').innerHTML =
    "<button onclick=\\"document.title='deleted'\\">Delete account</button>";"""


@pytest.mark.parametrize("swap", [True, False], ids=["swapped", "control-unchanged"])
async def test_the_agent_never_clicks_an_element_swapped_in_while_it_thought(new_stagehand, server, swap: bool) -> None:
    release, swapped = threading.Event(), threading.Event()

    def pick_save_while_the_page_swaps(seen):
        step = call("act", element_id=seen.id("button", "Save"), method="click")
        if swap:
            release.set()  # the page swaps now; the model answers once it has
            assert swapped.wait(30)
        return step

    script = "<script>fetch('/model-thinking').then(() => { " + SWAP + " fetch('/swapped'); });</script>"
    routes = {"/profile": lambda req: Response.html(PAGE + script),
              "/model-thinking": lambda req: (release.wait(30), Response.json({}))[1],
              "/swapped": lambda req: (swapped.set(), Response.json({}))[1]}
    for path, handler in routes.items():
        server.route(path, handler)
    try:
        sh = await new_stagehand(model=AgentScript([pick_save_while_the_page_swaps, call("done", message="saved")],
                                                  others={"heal": lambda request: {"elements": []}}))  # no Save left to heal to
        await sh.page.goto(server.url("profile"))
        result = await sh.agent().execute("Save the profile", max_steps=3)
    finally:
        release.set()
        for path in routes:
            server.unroute(path)
    if swap:
        assert swapped.is_set() and await sh.page.title() == "Profile", result.message
    else:
        assert await sh.page.title() == "saved"
