"""A secret bound to a field: ``Secret(value, field="#pw")`` is typed only into an element that
matches that selector in its own document, decided from Playwright's utility world before any
key is sent, whatever element the model (or a cached or exported Action) chose. Anything else is
refused with :class:`SecretPlacementError` (an :class:`ActionFailedError`), nothing is typed and
the value shows in no error and no log record.

The hostile page overrides every page-world read a check could make (``matches``,
``querySelector(All)``, ``document.evaluate``) so that its "Notes" field claims to be ``#pw``;
the controls show that without the binding the same act does type the value there, and that a
check made in the page's world would have been fooled.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest
from _server import Response
from operations._ops import element, find_id, prompt_text

from stagehand_py import Action, ActionFailedError, InvalidArgumentError, Secret, SecretPlacementError
from stagehand_py.testing import FunctionLLM

PASSWORD = "Fi3ld-bound-Sw0rdfish"

#: The page's script makes every page-world read say that the Notes field is the password field.
_LYING_SCRIPT = """
const notes = () => document.getElementById('notes');
const realMatches = Element.prototype.matches;
Element.prototype.matches = function (s) { return (this.id === 'notes' && s.includes('pw')) || realMatches.call(this, s); };
const realQuery = Document.prototype.querySelector;
Document.prototype.querySelector = function (s) { return s.includes('pw') ? notes() : realQuery.call(this, s); };
const realAll = Document.prototype.querySelectorAll;
Document.prototype.querySelectorAll = function (s) { return s.includes('pw') ? [notes()] : realAll.call(this, s); };
const realEvaluate = Document.prototype.evaluate;
Document.prototype.evaluate = function (x, ...rest) { return realEvaluate.call(this, x.includes('pw') ? "//*[@id='notes']" : x, ...rest); };
"""


@pytest.fixture
def login_page(server):
    form = ("<title>Sign in</title><label>Password <input id=pw type=text></label>"
            f"<label>Notes <input id=notes></label><script>{_LYING_SCRIPT}</script>")
    with server.route("/login", lambda req: Response.html(form)):
        yield server


def _steering_model(prompts: list[str]) -> FunctionLLM:
    """A model steered by the page: asked to type the password, it picks the Notes field."""

    def answer(request) -> dict:
        prompts.append(prompt_text(request))
        return {"elements": [element(find_id(request, "textbox: Notes"), "fill", ["%pw%"], "the password field")],
                "opens_options": False}

    return FunctionLLM(answer)


@pytest.mark.parametrize("bound", [True, False], ids=["field-bound", "control-plain-value"])
async def test_a_model_steering_the_secret_to_another_field_is_refused(new_stagehand, login_page, caplog,
                                                                       bound: bool) -> None:
    caplog.set_level(logging.DEBUG, logger="stagehand_py")
    prompts: list[str] = []
    variables = {"pw": Secret(PASSWORD, field="#pw", description="the password") if bound else PASSWORD}
    sh = await new_stagehand(model=_steering_model(prompts))
    await sh.page.goto(login_page.url("login"))
    if bound:
        with pytest.raises(SecretPlacementError, match="may only be typed into the field '#pw'") as info:
            await sh.act("type the password into the password field", variables=variables)
        assert isinstance(info.value, ActionFailedError) and info.value.variable == "pw"  # old catches still work
        assert PASSWORD not in str(info.value) and PASSWORD not in repr(info.value)
        assert await sh.page.input_value("#notes") == "" and await sh.page.input_value("#pw") == ""
        assert len(prompts) == 1  # refused, not healed: the same model is not asked to try again
    else:
        assert (await sh.act("type the password into the password field", variables=variables)).success
        assert await sh.page.input_value("#notes") == PASSWORD  # the control: the steered fill lands
    logged = "\n".join(f"{r.name}: {r.getMessage()}" for r in caplog.records if r.name.startswith("stagehand_py"))
    assert PASSWORD not in logged and PASSWORD not in "".join(prompts)


@pytest.mark.parametrize("field", ["#pw", "css=input#pw", "xpath=//input[@id='pw']"])
async def test_the_bound_field_itself_gets_the_value(new_stagehand, login_page, field: str) -> None:
    variables = {"pw": Secret(PASSWORD, field=field)}
    sh = await new_stagehand()
    await sh.page.goto(login_page.url("login"))
    assert (await sh.act(Action(selector="#notes", method="fill", arguments=["a note"]), variables=variables)).success
    with pytest.raises(SecretPlacementError, match="nothing was typed"):
        await sh.act(Action(selector="xpath=//input[@id='notes']", method="type", arguments=["%pw%"]), variables=variables)
    assert await sh.page.input_value("#notes") == "a note"  # not one key of it reached the Notes field
    assert (await sh.act(Action(selector="xpath=/html[1]/body[1]/label[1]/input[1]", method="fill", arguments=["%pw%"]),
                         variables=variables)).success
    assert await sh.page.input_value("#pw") == PASSWORD


async def test_page_world_reads_would_have_been_fooled(new_stagehand, login_page) -> None:
    """The control for the check's world: in the page's world the Notes field is '#pw' by every
    read a check could make; the binding, decided in Playwright's utility world, still refuses."""
    sh = await new_stagehand()
    await sh.page.goto(login_page.url("login"))
    notes = await sh.page.query_selector("#notes")
    assert notes is not None
    assert await notes.evaluate("(el) => el.matches('#pw') && document.querySelector('#pw') === el")
    assert await sh.page.evaluate(
        "() => document.evaluate(\"//input[@id='pw']\", document, null, 9, null).singleNodeValue.id") == "notes"
    with pytest.raises(SecretPlacementError):
        await sh.act(Action(selector="#notes", method="fill", arguments=["%pw%"]),
                     variables={"pw": Secret(PASSWORD, field="xpath=//input[@id='pw']")})
    assert await sh.page.input_value("#notes") == ""


async def test_origins_and_field_together(new_stagehand, login_page, cross_server) -> None:
    """Both rules hold at once: the right field on another host is refused by origin, with the
    same error class; the right field on the right host gets it."""
    variables = {"pw": Secret(PASSWORD, origins=[login_page.origin], field="#pw")}
    sh = await new_stagehand()
    with cross_server.route("/login", lambda req: Response.html("<label>Password <input id=pw></label>")):
        await sh.page.goto(cross_server.url("login"))
        with pytest.raises(SecretPlacementError, match="may only be typed into a page of"):
            await sh.act(Action(selector="#pw", method="fill", arguments=["%pw%"]), variables=variables)
        assert await sh.page.input_value("#pw") == ""
    await sh.page.goto(login_page.url("login"))
    assert (await sh.act(Action(selector="#pw", method="fill", arguments=["%pw%"]), variables=variables)).success


def test_a_bad_field_is_a_typed_error_that_names_no_value() -> None:
    with pytest.raises(InvalidArgumentError, match="Secret\\(field=...\\)") as info:
        Secret(PASSWORD, field=7)  # type: ignore[arg-type]
    assert PASSWORD not in str(info.value)
    assert PASSWORD not in repr(Secret(PASSWORD, field="#pw")) and "#pw" in repr(Secret(PASSWORD, field="#pw"))


async def test_a_field_playwright_cannot_parse_is_a_typed_error(new_stagehand, login_page) -> None:
    sh = await new_stagehand()
    await sh.page.goto(login_page.url("login"))
    with pytest.raises(InvalidArgumentError, match="is not a selector Playwright can evaluate") as info:
        await sh.act(Action(selector="#pw", method="fill", arguments=["%pw%"]),
                     variables={"pw": Secret(PASSWORD, field="input[[")})
    assert PASSWORD not in str(info.value)
    assert await sh.page.input_value("#pw") == ""


@pytest.mark.parametrize("bound", [True, False], ids=["field-bound", "control-plain-value"])
async def test_the_agent_cannot_type_a_bound_secret_elsewhere(new_stagehand, login_page, caplog, bound: bool) -> None:
    """The DOM agent's act and fill_form tools go through the same check: a model told by the page
    to put the password into Notes gets a failed step, and Notes stays empty."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "agent"))
    from _script import AgentScript, call  # tests/agent/_script.py: the scripted agent model

    caplog.set_level(logging.DEBUG, logger="stagehand_py")
    script = AgentScript([
        lambda seen: call("act", element_id=seen.id("textbox", "Notes"), method="fill", arguments=["%pw%"]),
        lambda seen: call("fill_form", fields=[{"element_id": seen.id("textbox", "Notes"), "value": "%pw%"}]),
        call("done", message="typed"),
    ], others={"heal": lambda request: {"elements": []}})
    sh = await new_stagehand(model=script)
    await sh.page.goto(login_page.url("login"))
    variables = {"pw": Secret(PASSWORD, field="#pw") if bound else PASSWORD}
    result = await sh.agent().execute("Sign in", max_steps=4, variables=variables)
    outcomes = [s for s in result.steps if s.tool in ("act", "fill_form")]
    assert len(outcomes) == 2
    if bound:
        assert not any(s.ok for s in outcomes), [s.result for s in outcomes]
        assert all("SecretPlacementError" in s.result for s in outcomes), [s.result for s in outcomes]
        assert await sh.page.input_value("#notes") == ""
    else:
        assert await sh.page.input_value("#notes") == PASSWORD  # the control: the agent's fill lands
    logged = "\n".join(f"{r.name}: {r.getMessage()}" for r in caplog.records if r.name.startswith("stagehand_py"))
    assert PASSWORD not in logged and PASSWORD not in result.model_dump_json()


@pytest.mark.parametrize("bound", [True, False], ids=["bound", "control-plain-value"])
async def test_the_computer_use_agent_refuses_a_bound_secret(new_stagehand, server, bound: bool) -> None:
    """Typing by coordinates sends keys to whatever has the focus, which no check can pin down
    first: a bound secret is refused outright (the page here focuses its Notes field)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "agent"))
    from _script import AgentScript, call  # tests/agent/_script.py: the scripted agent model

    page = "<title>Sign in</title><label>Password <input id=pw></label><label>Notes <input id=notes autofocus></label>"
    with server.route("/focus-login", lambda req: Response.html(page)):
        sh = await new_stagehand(model=AgentScript([call("type", text="%pw%"), call("done", message="typed")]))
        await sh.page.goto(server.url("focus-login"))
        await sh.page.wait_for_function("document.activeElement && document.activeElement.id === 'notes'")
        variables = {"pw": Secret(PASSWORD, field="#pw") if bound else PASSWORD}
        result = await sh.agent(mode="cua").execute("Sign in", max_steps=3, variables=variables)
    [typed] = [s for s in result.steps if s.tool == "type"]
    if bound:
        assert not typed.ok and "SecretPlacementError" in typed.result and PASSWORD not in typed.result
        assert await sh.page.input_value("#notes") == ""
    else:
        assert typed.ok and await sh.page.input_value("#notes") == PASSWORD  # the control: the keys land
