"""observe() -> validate -> act(), act(instruction), placeholders: real Chromium, scripted model."""

from __future__ import annotations

import json

import pytest

from stagehand_py import (
    Action,
    ActResult,
    ConfigurationError,
    Stagehand,
    UnknownVariableError,
)
from stagehand_py.testing import FunctionLLM, ScriptedLLM, capture_requests

from ._ops import element, find_id, first_user


async def test_validate_then_act_login(page, server):
    """The headline flow: observe returns placeholder actions, the caller checks them, act fills real values."""
    await page.goto(server.url("forms.html"))

    def model(request):
        assert request.purpose == "observe"
        text = first_user(request)
        assert "%username%" in text and "%password%" in text and "account password" in text
        return {"elements": [
            element(find_id(request, "textbox: Username"), "fill", ["%username%"], "Username field"),
            element(find_id(request, "textbox: Password"), "fill", ["%password%"], "Password field"),
            element(find_id(request, "button: Sign in"), "click", [], "Sign in button"),
        ]}

    sh = Stagehand(page, model=FunctionLLM(model))
    variables = {"username": "ada", "password": {"value": "s3cret-pw", "description": "account password"}}
    actions = await sh.observe("log in", variables=variables)
    assert [a.method for a in actions] == ["fill", "fill", "click"]
    assert actions[0].arguments == ["%username%"] and actions[1].arguments == ["%password%"]
    assert all(a.selector.startswith("xpath=/html[1]/body[1]/form[1]/") for a in actions)

    # Validate: the caller checks the plan before anything runs.
    assert actions[1].description == "Password field"
    for action in actions[:2]:
        result = await sh.act(action, variables=variables)
        assert result.success and not result.cache_hit and result.actions == [action]
    assert await page.input_value("#username") == "ada"
    assert await page.input_value("#password") == "s3cret-pw"
    async with page.expect_navigation():
        await sh.act(actions[2])
    echoed = json.loads(await page.inner_text("body"))
    assert "username=ada" in echoed["body"] and "password=s3cret-pw" in echoed["body"]
    assert sh.metrics.by_purpose["observe"].requests == 1


async def test_act_action_needs_no_model_and_unknown_placeholder_fails_first(page, server):
    await page.goto(server.url("forms.html"))
    sh = Stagehand(page)  # no model at all
    fill = Action(selector="xpath=/html[1]/body[1]/form[1]/input[1]", method="fill", arguments=["%username%"])
    with pytest.raises(UnknownVariableError, match="%username%"):
        await sh.act(fill, variables={"user": "ada"})
    assert await page.input_value("#username") == ""
    result = await sh.act(fill, variables={"username": "ada"})
    assert result.success and await page.input_value("#username") == "ada"


async def test_no_model_configured(page, server, monkeypatch):
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    await page.goto(server.url("forms.html"))
    sh = Stagehand(page)
    for call in (sh.observe(), sh.act("click sign in"), sh.extract("the title")):
        with pytest.raises(ConfigurationError, match="OPENAI_API_KEY.*ANTHROPIC_API_KEY.*base_url"):
            await call
    assert "Sign in" in (await sh.snapshot()).tree


async def test_act_instruction_plans_one_action_from_a_fresh_snapshot(page, server):
    await page.goto(server.url("forms.html"))

    def answer(request):
        assert request.purpose == "act" and "Instruction: choose Germany as country" in first_user(request)
        return {"elements": [element(find_id(request, "combobox: Country"), "select_option", ["Germany"])], "opens_options": False}

    sh = Stagehand(page, model=FunctionLLM(answer))
    with capture_requests() as calls:
        result = await sh.act("choose Germany as country")
    assert isinstance(result, ActResult) and result.success and not result.healed
    assert len(calls) == 1 and result.actions[0].method == "select_option"
    assert await page.input_value("#country") == "de"


async def test_act_reports_when_nothing_fits(page, server):
    await page.goto(server.url("forms.html"))
    # Twice: the outline, then vision="auto"'s fallback with an annotated screenshot.
    sh = Stagehand(page, model=ScriptedLLM([{"elements": [], "opens_options": False}] * 2))
    result = await sh.act("open the shopping cart")
    assert not result.success and "shopping cart" in result.message and result.actions == []


async def test_reasks_do_not_nest_one_bounded_loop_per_part(page, server):
    """Schema problems and page problems (an id the page lacks) share the client's one re-ask loop:
    a model that alternates between the two gets max_reasks + 1 = 3 requests, not 3 x 3."""
    await page.goto(server.url("forms.html"))
    answers = [
        {"elements": [element("9-99999", "click", [], "a button the page lacks")]},  # fits the schema, not the page
        {"elements": "not a list"},  # does not fit the schema
    ]
    calls: list[int] = []

    def model(request):
        calls.append(request.attempt)
        return answers[(len(calls) - 1) % 2]

    sh = Stagehand(page, model=FunctionLLM(model))
    from stagehand_py import OutputValidationError

    with pytest.raises(OutputValidationError) as caught:
        await sh.observe("click the launch button")
    assert calls == [1, 2, 3]
    assert "9-99999" in str(caught.value) and "selector=" in str(caught.value)
