"""Two-step controls (issue 15.3): after the first click the second choice is made among what
appeared or changed, and the element just clicked is never clicked again in the same act
(a second click closes the list, flips the sort back). On wrapped and launched pages."""

from __future__ import annotations

from _server import Response

from stagehand_py.testing import FunctionLLM

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
