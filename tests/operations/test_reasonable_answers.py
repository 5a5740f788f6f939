"""What a model reasonably answers is taken, not re-asked into an error: actions whose value the
instruction did not give (issue 15.2), and an ``<option>`` line picked for a native select
(15.6, as a real 1.5B model answered). Each on a wrapped and a launched page."""

from __future__ import annotations

import pytest
from _server import Response

from stagehand_py import UnknownVariableError
from stagehand_py.testing import FunctionLLM, capture_requests

from ._ops import element, find_id, first_user, last_user

SEARCH = """<!DOCTYPE html><html><head><title>Shop</title></head><body>
<form><label>Search products <input id="q" type="search"></label>
<label>Country <select id="country"><option value="">Choose</option><option value="de">Germany</option>
<option value="jp">Japan</option></select></label>
<label>Shortcut <input id="key"></label></form></body></html>"""


async def _open(make_stagehand, server, model, path: str = "shop.html"):
    sh = await make_stagehand(model=FunctionLLM(model))
    with server.route(f"/{path}", lambda req: Response.html(SEARCH)):
        await sh.page.goto(server.url(path))
    return sh


async def test_observe_keeps_actions_whose_value_the_instruction_did_not_give(make_stagehand, server):
    def model(request):  # no value was given, so a good model invents none
        return {"elements": [
            element(find_id(request, "searchbox: Search products"), "fill", [], "search box"),
            element(find_id(request, "combobox: Country"), "select_option", [], "country select"),
            element(find_id(request, "textbox: Shortcut"), "press", [""], "shortcut field"),
        ]}

    sh = await _open(make_stagehand, server, model)
    with capture_requests() as calls:
        actions = await sh.observe("fill the search box, pick a country and press a key in the shortcut field")
    assert len(calls) == 1  # accepted as answered, not re-asked
    assert [(a.method, a.arguments, a.missing_arguments) for a in actions] == [
        ("fill", ["%search_products%"], ["search_products"]),
        ("select_option", ["%country%"], ["country"]),
        ("press", ["%shortcut%"], ["shortcut"]),
    ]
    with pytest.raises(UnknownVariableError, match=r"fill on 'search box' has no text.*%search_products%.*variables=") as caught:
        await sh.act(actions[0])
    assert caught.value.missing == ["search_products"]
    assert await sh.page.input_value("#q") == ""  # refused before the browser was touched
    await sh.act(actions[0], variables={"search_products": "trail shoes"})
    await sh.act(actions[1], variables={"country": "Japan"})
    assert await sh.page.input_value("#q") == "trail shoes" and await sh.page.input_value("#country") == "jp"


async def test_act_with_an_instruction_that_gives_no_value_says_what_to_pass(make_stagehand, server):
    def model(request):  # a good model uses a variable it is given, and invents no value
        given = ["%search_products%"] if "%search_products%" in first_user(request) else []
        return {"elements": [element(find_id(request, "searchbox: Search products"), "fill", given)], "opens_options": False}

    sh = await _open(make_stagehand, server, model, "shop-act.html")
    with pytest.raises(UnknownVariableError, match="has no text.*Pass a value"):
        await sh.act("fill the search box")
    # With the placeholder's value given, the same instruction fills it.
    result = await sh.act("fill the search box", variables={"search_products": "boots"})
    assert result.success and await sh.page.input_value("#q") == "boots"


@pytest.mark.parametrize("method", ["select_option", "click"])
async def test_an_option_line_picked_for_a_native_select_selects_it_there(make_stagehand, server, method):
    """A real small model answers the <option> line (with select_option, or a click) instead of
    the <select>: the SDK selects that option in its select, as the user meant."""
    def model(request):
        assert "Choose Japan" in first_user(request)
        option = find_id(request, "option: Japan")
        return {"elements": [element(option, method, ["Japan"] if method == "select_option" else [], "Japan")]}

    sh = await _open(make_stagehand, server, model, f"shop-{method}.html")
    with capture_requests() as calls:
        actions = await sh.observe("Choose Japan as the country")
    assert len(calls) == 1
    assert [(a.method, a.arguments) for a in actions] == [("select_option", ["Japan"])]
    assert actions[0].selector.endswith("/select[1]")
    await sh.act(actions[0])
    assert await sh.page.input_value("#country") == "jp"


PLANS = """<!DOCTYPE html><html><head><title>Plans</title></head><body><form><fieldset><legend>Plan</legend>
<label><input type="radio" name="plan" value="basic" checked> Basic plan</label>
<label><input type="radio" name="plan" value="pro"> Pro plan</label></fieldset></form></body></html>"""


@pytest.mark.parametrize("arguments", [["Pro"], ["Pro plan"], []])
async def test_a_radio_picked_for_select_option_with_its_own_name_is_checked(make_stagehand, server, arguments):
    """The embedded model answered "choose the Pro plan" with the Pro radio and select_option
    'Pro' (benchmarks/local_model_speed.py): the act failed at the browser ('needs a native
    <select>'). A radio is selected by checking it: taken as check, in one request."""
    def model(request):
        return {"elements": [element(find_id(request, "radio: Pro plan"), "select_option", arguments, "Pro plan")],
                "opens_options": False}

    sh = await make_stagehand(model=FunctionLLM(model))
    with server.route("/plans.html", lambda req: Response.html(PLANS)):
        await sh.page.goto(server.url("plans.html"))
    with capture_requests() as calls:
        result = await sh.act("choose the Pro plan")
    assert result.success and len(calls) == 1
    assert await sh.page.is_checked("input[value=pro]")


async def test_a_radio_picked_for_select_option_with_another_name_is_reasked_not_moved(make_stagehand, server):
    """The Basic radio with select_option 'Pro': the SDK does not move the act to the Pro radio the
    model did not pick; it re-asks, saying why, and the second answer decides."""
    answers = iter(["Basic plan", "Pro plan"])

    def model(request):
        name = next(answers)
        method = "select_option" if name == "Basic plan" else "check"
        return {"elements": [element(find_id(request, f"radio: {name}"), method, ["Pro"] if method == "select_option" else [],
                                     name)], "opens_options": False}

    sh = await make_stagehand(model=FunctionLLM(model))
    with server.route("/plans-other.html", lambda req: Response.html(PLANS)):
        await sh.page.goto(server.url("plans-other.html"))
    with capture_requests() as calls:
        result = await sh.act("choose the Pro plan")
    assert len(calls) == 2
    assert "select_option is only for a native select" in str(calls[1].request.messages)
    assert result.success and await sh.page.is_checked("input[value=pro]")


NAMED = """<!DOCTYPE html><html><head><title>Account</title></head><body>
<h1>Account</h1><label>Email <input id="email"></label>
<button id="save" onclick="this.textContent='Saved'">Save</button>
<button id="cancel" onclick="this.textContent='Cancelled'">Cancel</button>
<button id="delete" onclick="this.textContent='Deleted'">Delete account</button></body></html>"""


async def _open_named(make_stagehand, server, model, path: str):
    sh = await make_stagehand(model=FunctionLLM(model))
    with server.route(f"/{path}", lambda req: Response.html(NAMED)):
        await sh.page.goto(server.url(path))
    return sh


@pytest.mark.parametrize(("answer", "target"), [
    ("textbox: Email", "#email"),       # the line's own text after the id (a real 1.5B model's answer)
    ("Delete account", "#delete"),      # its name alone
    (" [BUTTON:  delete ACCOUNT] ", "#delete"),  # case, spacing and brackets aside
    ("{number}", "#save"),              # the id without its frame ordinal, on a page of one frame
])
async def test_an_element_given_by_its_own_line_text_is_taken(make_stagehand, server, answer, target):
    """A small model asked for an id often writes the text after it instead. When that text
    names exactly one element, that is the element it picked: taken, not re-asked."""
    def model(request):
        number = find_id(request, "button: Save").split("-")[1]
        method, arguments = ("fill", ["ada@example.test"]) if target == "#email" else ("click", [])
        return {"elements": [element(answer.format(number=number), method, arguments)], "opens_options": False}

    sh = await _open_named(make_stagehand, server, model, f"named-{target[1:]}-{len(answer)}.html")
    with capture_requests() as calls:
        result = await sh.act("do it")
    assert len(calls) == 1 and result.success
    assert result.dispatched == [f"{'fill' if target == '#email' else 'click'} on xpath="
                                 f"{await _xpath_of(sh, target)}"]
    if target == "#email":
        assert await sh.page.input_value("#email") == "ada@example.test"
    else:
        assert await sh.page.text_content(target) in ("Saved", "Deleted")
    assert await sh.page.text_content("#cancel") == "Cancel"


async def _xpath_of(sh, css: str) -> str:
    snapshot = await sh.snapshot()
    tag_id = css[1:]
    for path in snapshot.xpath_map.values():
        if await sh.page.evaluate("([p, id]) => document.evaluate(p, document, null, 9, null)"
                                  ".singleNodeValue?.id === id", [path, tag_id]):
            return path
    raise AssertionError(f"{css} is not in the snapshot")


@pytest.mark.parametrize("case", ["several", "control-none"])
async def test_text_that_names_several_elements_is_re_asked_with_their_ids(make_stagehand, server, case):
    """'button' names three lines: nothing is clicked, and the re-ask lists their ids so a small
    model can pick one. Control: text that names no line gets the plain re-ask, no list."""
    answers: list[str] = []

    def model(request):
        if len(answers) == 0:
            answers.append("button" if case == "several" else "the red one")
            return {"elements": [element(answers[0])], "opens_options": False}
        answers.append(last_user(request))
        return {"elements": [element(find_id(request, "button: Cancel"))], "opens_options": False}

    sh = await _open_named(make_stagehand, server, model, f"several-{case}.html")
    with capture_requests() as calls:
        result = await sh.act("cancel it")
    assert len(calls) == 2 and result.success
    assert [await sh.page.text_content(b) for b in ("#save", "#cancel", "#delete")] == ["Save", "Cancelled", "Delete account"]
    ids = [find_id(calls[0].request, f"button: {name}") for name in ("Save", "Cancel", "Delete account")]
    listed = f"it reads like the lines {', '.join(f'[{i}]' for i in ids)}"
    assert (listed in answers[1]) == (case == "several"), answers[1]
    assert "is not an id of the outline" in answers[1]
