"""Self-heal, the custom-dropdown two-step, and the action cache (replay with zero model calls)."""

from __future__ import annotations

import json

import pytest

from stagehand_py import Action, ElementIdentity, ElementNotFoundError, LLMError, Stagehand
from stagehand_py.testing import FunctionLLM, capture_requests

from ._ops import element, find_id, first_user

MOVE_LOAD_BUTTON = "const b = document.getElementById('load'); const w = document.createElement('section'); b.before(w); w.append(b);"


def fail_if_called(request):
    raise AssertionError(f"the model was called ({request.purpose}) but the cache should have answered")


async def test_self_heal_after_the_page_changed(page, server):
    await page.goto(server.url("dynamic.html"))
    purposes = []

    def model(request):
        purposes.append(request.purpose)
        if request.purpose == "heal":
            text = first_user(request)
            assert "Load items button" in text and "method: click" in text
        return {"elements": [element(find_id(request, "button: Load items"), "click", [], "Load items button")]}

    sh = Stagehand(page, model=FunctionLLM(model))
    [action] = await sh.observe("the load items button")
    await page.evaluate(MOVE_LOAD_BUTTON)  # the observed xpath now names nothing
    result = await sh.act(action)
    assert result.healed and result.success and purposes == ["observe", "heal"]
    assert result.actions[0].selector != action.selector and "section[1]" in result.actions[0].selector
    assert result.elements == [ElementIdentity("button", "Load items")]  # the element the heal acted on
    assert result.usage.requests == 1  # the heal's call: what this act spent (observe's call is not)
    await page.wait_for_function("document.getElementById('load-status').textContent === 'loaded'")

    # Without self-heal the broken selector is a typed error, and no model call is made.
    await page.evaluate("document.querySelector('section').replaceWith(...document.querySelector('section').childNodes)")
    strict = Stagehand(page, model=FunctionLLM(fail_if_called), self_heal=False)
    with pytest.raises(ElementNotFoundError):
        await strict.act(result.actions[0])


async def test_custom_dropdown_two_steps(page, server):
    await page.goto(server.url("aria.html"))
    seen = []

    def model(request):
        text = first_user(request)
        seen.append(text)
        if len(seen) == 1:
            return {"elements": [element(find_id(request, "combobox: Favourite fruit"), "click", [], "fruit dropdown")],
                    "opens_options": True}
        assert "option: Cherry" in text and "heading: Tabs" not in text  # only what the click revealed
        return {"elements": [element(find_id(request, "option: Cherry"), "click", [], "Cherry option")], "opens_options": False}

    sh = Stagehand(page, model=FunctionLLM(model))
    result = await sh.act("choose cherry as favourite fruit")
    assert result.success and [a.description for a in result.actions] == ["fruit dropdown", "Cherry option"]
    assert [e.role for e in result.elements if e is not None] == ["combobox", "option"]
    assert result.usage.requests == 2
    assert await page.inner_text("#status") == "fruit cherry" and len(seen) == 2


async def test_act_cache_replays_without_the_model_and_heals_stale_entries(page, server, tmp_path):
    await page.goto(server.url("forms.html"))
    variables = {"username": {"value": "ada-lovelace", "description": "login name"}}

    def model(request):
        return {"elements": [element(find_id(request, "textbox: Username"), "fill", ["%username%"], "Username field")],
                "opens_options": False}

    first = await Stagehand(page, model=FunctionLLM(model), cache_dir=tmp_path).act("type the user name", variables=variables)
    assert first.success and not first.cache_hit
    [entry] = list(tmp_path.glob("act-type-the-user-name-*.json"))
    stored = json.loads(entry.read_text())
    assert stored["variables"] == ["username"] and stored["actions"][0]["arguments"] == ["%username%"]
    assert "ada-lovelace" not in entry.read_text()

    await page.reload()
    sh = Stagehand(page, model=FunctionLLM(fail_if_called), cache_dir=tmp_path)
    with capture_requests() as calls:
        again = await sh.act("type the user name", variables={"username": "grace"})
    assert again.cache_hit and again.success and calls == []
    assert await page.input_value("#username") == "grace"

    # Stale: the input moved; the replay heals it with one model call and rewrites the entry.
    await page.reload()
    await page.evaluate("const f = document.getElementById('login'); const d = document.createElement('div'); f.before(d); d.append(f);")
    healer = Stagehand(page, model=FunctionLLM(model), cache_dir=tmp_path)
    with capture_requests() as calls:
        healed = await healer.act("type the user name", variables=variables)
    assert healed.cache_hit and healed.healed and [c.request.purpose for c in calls] == ["heal"]
    rewritten = json.loads(entry.read_text())
    assert rewritten["actions"][0]["selector"] == healed.actions[0].selector != stored["actions"][0]["selector"]
    assert await page.input_value("#username") == "ada-lovelace"


async def test_observe_cache(page, server, tmp_path):
    await page.goto(server.url("forms.html"))
    model = FunctionLLM(lambda r: {"elements": [element(find_id(r, "button: Sign in"), "click", [], "Sign in")]})
    actions = await Stagehand(page, model=model, cache_dir=tmp_path).observe("the sign in button")
    replayed = await Stagehand(page, model=FunctionLLM(fail_if_called), cache_dir=tmp_path).observe("the sign in button")
    assert replayed == actions and isinstance(replayed[0], Action)
    # A different URL (query) is a different key: the model is asked again.
    await page.goto(server.url("forms.html?x=1"))
    with pytest.raises(LLMError, match="cache should have answered"):
        await Stagehand(page, model=FunctionLLM(fail_if_called), cache_dir=tmp_path).observe("the sign in button")
