"""A popup that opens in the middle of an act (issue 28.1): the act finishes on the tab it started
on (its page session: settle, snapshots, element identities, the cache entry), and the popup is
driven from the next verb on, on its own session. On wrapped and launched pages.

The click on "More actions" both opens a menu on the page and opens a help popup whose menu has
the same structure (so a path read on the popup also resolves on the acting tab) but other names:
an act that read the popup mid-way would show "Help centre" to the model and record the popup's
names (or none) in the cache entry.
"""

from __future__ import annotations

import json
import re

from _server import Response

from stagehand_py._operations import _pipeline
from stagehand_py.testing import FunctionLLM

from ._ops import element, find_id, first_user

ORDERS = """<!DOCTYPE html><html><head><title>Orders</title></head><body>
<h1>Orders</h1>
<div role="menu" id="items" hidden><div role="menuitem">Archive</div><div role="menuitem">Delete</div></div>
<button id="menu" aria-haspopup="menu" aria-expanded="false">More actions</button>
<p id="log">nothing chosen</p>
<script>
  const button = document.getElementById("menu"), items = document.getElementById("items");
  button.onclick = () => {
    items.hidden = false;
    button.setAttribute("aria-expanded", "true");
    window.open("/popup-mid-act-help.html");
  };
  items.onclick = (event) => { document.getElementById("log").textContent = "menu: " + event.target.textContent; };
</script></body></html>"""

HELP = """<!DOCTYPE html><html><head><title>Help</title></head><body>
<h1>Help centre</h1>
<div role="menu"><div role="menuitem">Archive (help)</div><div role="menuitem">Delete (help)</div></div>
<button id="contact">Contact support</button>
<p id="log">nothing chosen</p>
<script>
  document.getElementById("contact").onclick = () => { document.getElementById("log").textContent = "contact"; };
</script></body></html>"""

INSTRUCTION = "archive it from the actions menu"


def popup_model(step2: list[str], observed: list[str]):
    """act step 1: "More actions", saying it opens options; step 2: "Archive" among the new
    elements (else the first new menu item: what a model shown only the popup would pick);
    observe: "Contact support"."""

    def model(request):
        text = first_user(request)
        if request.purpose == "observe":
            observed.append(text)
            return {"elements": [element(find_id(text, "button: Contact support"), "click", [], "Contact support")]}
        if "These elements appeared" not in text:
            return {"elements": [element(find_id(text, "button: More actions"), "click", [], "More actions")],
                    "opens_options": True}
        step2.append(text)
        new = text.split("These elements appeared", 1)[1]
        chosen = re.search(r"\[(\d+-\d+)\] menuitem: Archive$", new, flags=re.M) or re.search(
            r"\[(\d+-\d+)\] menuitem: ", new)
        assert chosen, f"no menu item among the new elements:\n{new}"
        return {"elements": [element(chosen.group(1), "click", [], "Archive")], "opens_options": False}

    return model


async def test_a_popup_opened_mid_act_is_driven_only_after_the_act(make_stagehand, server, tmp_path, monkeypatch):
    settled_on = []
    settle = _pipeline.settled_clock

    async def recording_settle(page, **kwargs):
        settled_on.append(page)
        return await settle(page, **kwargs)

    monkeypatch.setattr(_pipeline, "settled_clock", recording_settle)
    step2: list[str] = []
    observed: list[str] = []
    sh = await make_stagehand(model=FunctionLLM(popup_model(step2, observed)), cache_dir=tmp_path)
    with server.route("/popup-mid-act-orders.html", lambda req: Response.html(ORDERS)), \
            server.route("/popup-mid-act-help.html", lambda req: Response.html(HELP)):
        await sh.page.goto(server.url("popup-mid-act-orders.html"))
        acting = sh.page

        result = await sh.act(INSTRUCTION)

        assert result.success, result.message
        # The cache entry: both actions, each with the identity of the element on the acting tab
        # it was chosen from (not None, not the popup's "Archive (help)").
        [entry_file] = tmp_path.glob("act-*.json")
        entry = json.loads(entry_file.read_text(encoding="utf-8"))
        assert entry["elements"] == [{"role": "button", "name": "More actions"},
                                     {"role": "menuitem", "name": "Archive"}]
        assert [a["selector"] for a in entry["actions"]] == [a.selector for a in result.actions]
        assert entry["url"].endswith("/popup-mid-act-orders.html")
        # Every read of the act settled on and showed the acting tab, the second one included
        # (made after the popup had opened): the model never saw the popup.
        assert len(step2) == 1 and "Help centre" not in step2[0] and "menuitem: Archive" in step2[0]
        assert len(settled_on) >= 2 and all(page is acting for page in settled_on)
        # Both clicks landed on the acting tab.
        assert await acting.inner_text("#log") == "menu: Archive"
        [popup] = [page for page in sh.pages if page is not acting]
        await popup.wait_for_load_state()
        assert await popup.inner_text("#log") == "nothing chosen"

        # The popup is driven from the next verb on, on its own session.
        assert sh.page is popup
        settled_on.clear()
        [action] = await sh.observe("the contact support button")
        assert "Help centre" in observed[0] and "Orders" not in observed[0]
        assert settled_on and all(page is popup for page in settled_on)
        await sh.act(action)
        assert await popup.inner_text("#log") == "contact"
        assert await acting.inner_text("#log") == "menu: Archive"
        popup_session, acting_session = sh._pages.of(popup), sh._pages.of(acting)
        assert popup_session is not acting_session
        assert action.selector in popup_session.identities
        # The acting tab's identities were not cleared by driving the popup.
        assert {i.name for i in acting_session.identities.values()} >= {"More actions", "Archive"}

        # Closing the popup drops its session; the acting tab is driven again, on its own session.
        await sh.close_page(popup)
        assert sh.page is acting and popup not in sh._pages._sessions
        assert sh._pages.of(acting) is acting_session
        assert "Orders" in (await sh.snapshot()).tree
