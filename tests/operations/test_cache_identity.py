"""Cache replay checks that a cached XPath still names the element it was cached for.

The entry keeps the element's outline role and name (never a value); a replay whose XPath now
names another element is stale: healed by description, run, rewritten.
"""

from __future__ import annotations

import json

import pytest

from stagehand_py import ElementNotFoundError, Stagehand
from stagehand_py.testing import FunctionLLM, capture_requests

from ._ops import element, find_id

# A wrapper before the username input: the cached path form[1]/input[1] now names the password field.
WRAP_USERNAME = ("const u = document.getElementById('username'); const s = document.createElement('span');"
                 " u.before(s); s.append(u);")
SECRET = "CANARY-ident-77c1"


def fill_username(request):
    return {"elements": [element(find_id(request, "textbox: Username"), "fill", ["%username%"], "Username field")],
            "opens_options": False}


def fail_if_called(request):
    raise AssertionError(f"the model was called ({request.purpose}) but the cache should have answered")


async def _cache_entry(page, server, tmp_path):
    await page.goto(server.url("forms.html"))
    first = await Stagehand(page, model=FunctionLLM(fill_username), cache_dir=tmp_path).act(
        "type the user name", variables={"username": SECRET})
    assert first.success and not first.cache_hit
    [entry] = list(tmp_path.glob("act-type-the-user-name-*.json"))
    return entry


async def test_entry_keeps_role_and_name_but_no_value(page, server, tmp_path):
    entry = await _cache_entry(page, server, tmp_path)
    text = entry.read_text()
    stored = json.loads(text)
    assert stored["elements"] == [{"role": "textbox", "name": "Username"}]
    assert SECRET not in text and "value" not in json.dumps(stored["elements"])


async def test_replay_onto_a_different_element_heals_instead(page, server, tmp_path):
    entry = await _cache_entry(page, server, tmp_path)
    stored = json.loads(entry.read_text())
    await page.reload()
    await page.evaluate(WRAP_USERNAME)
    # The cached path still resolves, to exactly one element: the password field.
    assert await page.eval_on_selector(f"{stored['actions'][0]['selector']}", "e => e.id") == "password"

    sh = Stagehand(page, model=FunctionLLM(fill_username), cache_dir=tmp_path)
    with capture_requests() as calls:
        result = await sh.act("type the user name", variables={"username": "grace"})
    assert [c.request.purpose for c in calls] == ["heal"]
    assert result.success and result.cache_hit and result.healed
    assert await page.input_value("#username") == "grace" and await page.input_value("#password") == ""
    rewritten = json.loads(entry.read_text())
    assert rewritten["actions"][0]["selector"] == result.actions[0].selector != stored["actions"][0]["selector"]
    assert rewritten["elements"] == [{"role": "textbox", "name": "Username"}]
    assert "grace" not in entry.read_text()

    # The rewritten entry now replays with no model call.
    await page.reload()
    await page.evaluate(WRAP_USERNAME)
    with capture_requests() as calls:
        again = await Stagehand(page, model=FunctionLLM(fail_if_called), cache_dir=tmp_path).act(
            "type the user name", variables={"username": "ada"})
    assert calls == [] and again.cache_hit and not again.healed
    assert await page.input_value("#username") == "ada" and await page.input_value("#password") == ""


async def test_mismatch_without_self_heal_is_an_error_not_a_wrong_action(page, server, tmp_path):
    await _cache_entry(page, server, tmp_path)
    await page.reload()
    await page.evaluate(WRAP_USERNAME)
    sh = Stagehand(page, model=FunctionLLM(fail_if_called), cache_dir=tmp_path, self_heal=False)
    with pytest.raises(ElementNotFoundError, match="names a different element") as info:
        await sh.act("type the user name", variables={"username": SECRET})
    assert SECRET not in str(info.value)
    assert await page.input_value("#password") == "" and await page.input_value("#username") == ""


async def test_entry_without_identity_still_replays(page, server, tmp_path):
    entry = await _cache_entry(page, server, tmp_path)
    old = json.loads(entry.read_text())
    del old["elements"]  # written before identities existed
    entry.write_text(json.dumps(old, indent=2))
    await page.reload()
    with capture_requests() as calls:
        result = await Stagehand(page, model=FunctionLLM(fail_if_called), cache_dir=tmp_path).act(
            "type the user name", variables={"username": "grace"})
    assert calls == [] and result.cache_hit and await page.input_value("#username") == "grace"


async def test_observe_replay_checks_identity_too(page, server, tmp_path):
    await page.goto(server.url("forms.html"))

    def model(request):
        return {"elements": [element(find_id(request, "textbox: Username"), "fill", ["%username%"], "Username field")]}

    actions = await Stagehand(page, model=FunctionLLM(model), cache_dir=tmp_path).observe(
        "the user name field", variables={"username": SECRET})
    await page.reload()
    await page.evaluate(WRAP_USERNAME)
    with capture_requests() as calls:
        again = await Stagehand(page, model=FunctionLLM(model), cache_dir=tmp_path).observe(
            "the user name field", variables={"username": SECRET})
    assert [c.request.purpose for c in calls] == ["observe"]  # stale: observed again
    assert again[0].selector != actions[0].selector
    assert await page.eval_on_selector(again[0].selector, "e => e.id") == "username"
