"""Redaction of variable values from page text: secrecy first, without garbling prompts.

Values of 4 characters or more are replaced wherever they occur; shorter ones only as whole
tokens and anywhere inside an input's ``value="..."`` (see ``redact_text``).
"""

from __future__ import annotations

from _server import Response

from stagehand_py import Action, Stagehand
from stagehand_py._secrets import SHORT_VALUE, redact_text
from stagehand_py.testing import FunctionLLM, capture_requests

from ._ops import first_user

SHORT = {"pin": "1", "initial": {"value": "a", "description": "middle initial"}}


def test_short_values_are_redacted_as_whole_tokens_only():
    assert SHORT_VALUE == 4
    text = '[0-5] heading: Plan a trip\n[0-6] StaticText: Step 1 of 10, room 101\n[0-7] textbox: Code value="x1y"'
    assert redact_text(text, SHORT) == (
        '[0-5] heading: Plan %initial% trip\n[0-6] StaticText: Step %pin% of 10, room 101\n'
        '[0-7] textbox: Code value="x%pin%y"'
    )


def test_long_values_are_redacted_everywhere_and_values_do_not_mix():
    variables = {"user": "ada-lovelace", "pin": "ada", "code": "ab\"c d"}
    text = 'StaticText: hi ada-lovelace!ada-lovelace\nStaticText: ada,adage\ntextbox: X value="ab\\"c d"'
    out = redact_text(text, variables)
    assert out == 'StaticText: hi %user%!%user%\nStaticText: %pin%,adage\ntextbox: X value="%code%"'
    # A placeholder already written is never redacted again (a value equal to a variable's name).
    assert redact_text("me and you", {"me": "you", "x": "me"}) == "%x% and %me%"
    # Short values next to each other, and digits as values, stay separate placeholders.
    many = {f"v{n}": str(n) for n in range(12)}
    assert redact_text("0 1 2 10 11", many) == "%v0% %v1% %v2% %v10% %v11%"


async def test_short_variable_values_leave_the_page_text_readable(page, server):
    await page.goto(server.url("forms.html"))
    sh = Stagehand(page, model=FunctionLLM(lambda r: {"elements": []}))
    fill = Action(selector="xpath=/html[1]/body[1]/form[1]/input[1]", method="fill", arguments=["%initial%"])
    await sh.act(fill, variables=SHORT)
    with capture_requests() as calls:
        await sh.observe("the plan choices", vision=False)
    sent = first_user(calls[0].request)
    assert 'textbox: Username value="%initial%"' in sent  # the typed value is still hidden
    for readable in ("heading: Sign in", "Plan", "Team", "Remember me", "Password", "Volume"):
        assert readable in sent, readable
    assert "%pin%" not in sent  # no "1" stands alone on this page


async def test_a_short_value_standing_alone_is_still_redacted(page, server):
    with server.route("/pin.html", lambda req: Response.html(
            "<!DOCTYPE html><html><body><h1>Pin 1 accepted</h1><p>Room 101</p><button>Go</button></body></html>")):
        await page.goto(server.url("pin.html"))
        sh = Stagehand(page, model=FunctionLLM(lambda r: {"elements": []}))
        sh_vars = {"pin": "1"}
        with capture_requests() as calls:
            await sh.observe("the go button", variables=sh_vars, vision=False)
    sent = first_user(calls[0].request)
    assert "heading: Pin %pin% accepted" in sent and "Room 101" in sent


def test_element_ids_are_never_redacted() -> None:
    """A PIN digit or a 4-digit code equal to part of an id leaves the id whole (the model must
    still be able to name the element); the same value in page text is redacted."""
    tree = "[0-1] button: 1\n  [2-1234] textbox: Code 1234 value=\"1\"\n[0-11] StaticText: [0-1]"
    out = redact_text(tree, {"pin": "1", "code": "1234"})
    assert out == "[0-1] button: %pin%\n  [2-1234] textbox: Code %code% value=\"%pin%\"\n[0-11] StaticText: [0-%pin%]"
