"""Two-step controls (issue 15.3): after the first click the second choice is made among what
appeared or changed, and the element just clicked is never clicked again in the same act
(a second click closes the list, flips the sort back). On wrapped and launched pages."""

from __future__ import annotations

import pytest
from _server import Response

from stagehand_py.testing import FunctionLLM, capture_requests

from ._ops import element, find_id, first_user

CONTROLS = """<!DOCTYPE html><html><head><title>Controls</title></head><body>
<button id="fruit" aria-haspopup="listbox" aria-expanded="false">Favourite fruit</button>
<ul role="listbox" id="fruits" hidden><li role="option">Apple</li><li role="option">Cherry</li></ul>
<button id="menu" aria-haspopup="menu" aria-expanded="false">More actions</button>
<div role="menu" id="items" hidden><div role="menuitem">Rename</div><div role="menuitem">Delete</div></div>
<table><thead><tr><th id="price-head" aria-sort="none"><button id="sort">Price</button></th></tr></thead>
<tbody id="rows"><tr><td>30</td></tr><tr><td>10</td></tr><tr><td>20</td></tr></tbody></table>
<p id="log">nothing chosen</p>
<script>
  window.clicks = {fruit: 0, menu: 0, sort: 0};
  for (const [opener, list] of [["fruit", "fruits"], ["menu", "items"]]) {
    const button = document.getElementById(opener), popup = document.getElementById(list);
    button.onclick = () => {  // a toggle: a second click closes it again
      window.clicks[opener] += 1;
      popup.hidden = !popup.hidden;
      button.setAttribute("aria-expanded", String(!popup.hidden));
    };
    popup.onclick = (event) => {
      document.getElementById("log").textContent = opener + ": " + event.target.textContent;
      popup.hidden = true;
      button.setAttribute("aria-expanded", "false");
    };
  }
  document.getElementById("sort").onclick = () => {  // each click flips the order
    window.clicks.sort += 1;
    const head = document.getElementById("price-head");
    const ascending = head.getAttribute("aria-sort") !== "ascending";
    head.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    const body = document.getElementById("rows");
    const rows = [...body.rows].sort((a, b) => (ascending ? 1 : -1) * (+a.innerText - +b.innerText));
    body.append(...rows);
  };
</script></body></html>"""


def two_step_model(opener: str, choice: str, *, insists: bool = False):
    """Step 1: the opener, saying it opens options. Step 2: the choice when the new elements show
    it; with ``insists``, first the opener again (its id from step 1: what a weak model does)."""
    step2: list[str] = []
    opener_id: list[str] = []

    def model(request):
        text = first_user(request)
        if "These elements appeared" not in text:
            opener_id.append(find_id(request, opener))
            return {"elements": [element(opener_id[-1], "click", [], opener)], "opens_options": True}
        step2.append(text)
        if insists and len(step2) == 1:
            return {"elements": [element(opener_id[-1], "click", [], opener)], "opens_options": False}
        return {"elements": [element(find_id(text, choice), "click", [], choice)], "opens_options": False}

    return model, step2


async def _open(make_stagehand, server, model, path: str):
    sh = await make_stagehand(model=FunctionLLM(model))
    with server.route(f"/{path}", lambda req: Response.html(CONTROLS)):
        await sh.page.goto(server.url(path))
    return sh


async def test_custom_listbox_picks_among_the_new_options_and_never_reclicks_the_opener(make_stagehand, server):
    model, step2 = two_step_model("button: Favourite fruit", "option: Cherry")
    sh = await _open(make_stagehand, server, model, "listbox.html")
    result = await sh.act("choose Cherry as favourite fruit")
    assert result.success and [a.description for a in result.actions] == ["button: Favourite fruit", "option: Cherry"]
    assert "Favourite fruit" not in step2[0].split("New elements:", 1)[1]  # the opener is not offered again
    assert await sh.page.inner_text("#log") == "fruit: Cherry"
    assert (await sh.page.evaluate("window.clicks"))["fruit"] == 1


async def test_menu_button_opener_picked_again_is_refused_and_reasked(make_stagehand, server):
    model, step2 = two_step_model("button: More actions", "menuitem: Delete", insists=True)
    sh = await _open(make_stagehand, server, model, "menu.html")
    result = await sh.act("delete it from the actions menu")
    assert result.success and [a.description for a in result.actions] == ["button: More actions", "menuitem: Delete"]
    assert len(step2) == 2  # the opener named again was refused and re-asked, not clicked
    assert await sh.page.inner_text("#log") == "menu: Delete"
    assert (await sh.page.evaluate("window.clicks"))["menu"] == 1


async def test_sort_toggle_header_is_clicked_once(make_stagehand, server):
    """The model takes the header for a dropdown: after its click only the header itself changed
    (the rows kept their lines), so there is nothing to choose and no second click flips it back."""
    model, step2 = two_step_model("button: Price", "option: none")
    sh = await _open(make_stagehand, server, model, "sort.html")
    result = await sh.act("sort the table by price, lowest first")
    assert [a.description for a in result.actions] == ["button: Price"] and not step2
    assert "not clicked again" in result.message
    assert await sh.page.get_attribute("#price-head", "aria-sort") == "ascending"
    assert await sh.page.eval_on_selector_all("#rows td", "cells => cells.map(c => c.innerText)") == ["10", "20", "30"]
    assert (await sh.page.evaluate("window.clicks"))["sort"] == 1


TICK = """<!DOCTYPE html><html><head><title>Sign in</title></head><body>
<label><input type="checkbox" id="remember"> Remember me</label>
<button id="more" onclick="document.getElementById('extra').hidden = false">More options</button>
<p id="extra" hidden><a href="#forever" id="forever" onclick="window.forever = true">Remember forever</a></p>
<script>
  // Ticking the box shows the same extra link: something new appears after either click.
  document.getElementById("remember").onchange = () => { document.getElementById("extra").hidden = false; };
</script></body></html>"""


@pytest.mark.parametrize("clicked", ["checkbox: Remember me", "control-button: More options"])
async def test_a_checkbox_said_to_open_options_is_just_ticked(make_stagehand, server, clicked):
    """A 1.5B model said opens_options of the Remember me checkbox, and the act's second step then
    clicked whatever changed after it. A checkbox, radio, switch or tab click opens no options:
    the act is the tick alone. Control: a button said to open options gets its second step."""
    opener = clicked.removeprefix("control-")
    model, step2 = two_step_model(opener, "link: Remember forever")
    sh = await make_stagehand(model=FunctionLLM(model))
    with server.route(f"/tick-{len(clicked)}.html", lambda req: Response.html(TICK)):
        await sh.page.goto(server.url(f"tick-{len(clicked)}.html"))
    with capture_requests() as calls:
        result = await sh.act("tick Remember me" if opener.startswith("checkbox") else "remember forever")
    assert result.success
    if opener.startswith("checkbox"):
        assert len(calls) == 1 and not step2 and len(result.dispatched) == 1
        assert await sh.page.is_checked("#remember")
        assert not await sh.page.evaluate("window.forever === true")
    else:
        assert len(calls) == 2 and len(step2) == 1 and len(result.dispatched) == 2
        assert await sh.page.evaluate("window.forever === true")
