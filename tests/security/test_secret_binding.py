"""Secrets bound to where they belong: a :class:`Secret` names the origins whose fields may
receive it, and an act refuses to type it anywhere else (a hostile cross-site iframe inside the
right page, or the right-looking form on another host), whatever element was chosen. A TOTP seed
yields the code current at the moment of typing, and neither the seed nor the code shows where a
value would not. Controls: the same acts with a plain value do type it into the hostile field,
and a plain seed is typed as is."""

from __future__ import annotations

import re
import time

import pyotp
import pytest
from _server import Response

from stagehand_py import Action, ActionFailedError, Secret, SecretPlacementError
from stagehand_py._secrets import redact_text
from stagehand_py.testing import FunctionLLM

PASSWORD = "Sw0rdfish-bound-secret"
SEED = "JBSWY3DPEHPK3PXPJBSWY3DP"


@pytest.fixture
def login_site(server, cross_server):
    """A sign-in page on 127.0.0.1 with a cross-site iframe from ``localhost`` holding a look-alike
    password field; the same form is served by ``localhost`` too."""
    form = "<label>Password <input id=pw type=text></label><label>Code <input id=otp></label>"
    with server.route("/login", lambda req: Response.html(
            f"<title>Sign in</title>{form}<iframe src='{cross_server.url('fake')}'></iframe>")), \
            cross_server.route("/fake", lambda req: Response.html("<label>Hostile <input id=steal></label>")), \
            cross_server.route("/login", lambda req: Response.html(f"<title>Sign in</title>{form}")):
        yield server, cross_server


async def _xpath(sh, line: str) -> str:
    snap = await sh.snapshot()
    m = re.search(rf"\[(\d+-\d+)\] {line}", snap.tree)
    assert m, snap.tree
    return "xpath=" + snap.xpath_map[m.group(1)]


@pytest.mark.parametrize("bound", [True, False], ids=["bound", "control-plain-value"])
async def test_a_bound_secret_is_never_typed_into_another_origins_field(new_stagehand, login_site, bound: bool) -> None:
    server, _ = login_site
    variables = {"pw": Secret(PASSWORD, origins=[server.origin]) if bound else PASSWORD}
    sh = await new_stagehand()
    await sh.page.goto(server.url("login"))
    await sh.page.frames[1].wait_for_selector("#steal")
    hostile_field = await _xpath(sh, "textbox: Hostile")
    if bound:
        with pytest.raises(SecretPlacementError, match="may only be typed into a page of") as info:
            await sh.act(Action(selector=hostile_field, method="fill", arguments=["%pw%"]), variables=variables)
        assert PASSWORD not in str(info.value) and isinstance(info.value, ActionFailedError)
        assert await sh.page.frames[1].input_value("#steal") == ""
        # The right field, on the right origin, still gets it.
        assert (await sh.act(Action(selector=await _xpath(sh, "textbox: Password"), method="fill", arguments=["%pw%"]),
                             variables=variables)).success
        assert await sh.page.input_value("#pw") == PASSWORD
    else:
        await sh.act(Action(selector=hostile_field, method="fill", arguments=["%pw%"]), variables=variables)
        assert await sh.page.frames[1].input_value("#steal") == PASSWORD  # the control: the iframe got it


@pytest.mark.parametrize("bound", [True, False], ids=["bound", "control-plain-value"])
async def test_the_same_form_on_another_host_does_not_get_it(new_stagehand, login_site, bound: bool) -> None:
    server, cross = login_site
    variables = {"pw": Secret(PASSWORD, origins=[server.origin]) if bound else PASSWORD}
    sh = await new_stagehand()
    await sh.page.goto(cross.url("login"))  # localhost: the look-alike
    action = Action(selector="#pw", method="fill", arguments=["%pw%"])
    if bound:
        with pytest.raises(SecretPlacementError, match="nothing was typed"):
            await sh.act(action, variables=variables)
        assert await sh.page.input_value("#pw") == ""
    else:
        await sh.act(action, variables=variables)
        assert await sh.page.input_value("#pw") == PASSWORD


@pytest.mark.parametrize("totp", [True, False], ids=["totp", "control-plain-seed"])
async def test_a_totp_secret_types_the_current_code_and_the_seed_never_shows(new_stagehand, login_site, totp: bool) -> None:
    server, _ = login_site
    prompts: list[str] = []

    def model(request) -> dict:
        prompts.append("\n".join(str(m.content) for m in request.messages))
        return {"elements": []}

    variables = {"otp": Secret(SEED, totp=True, description="the sign-in code") if totp else SEED}
    sh = await new_stagehand(model=FunctionLLM(model))
    await sh.page.goto(server.url("login"))
    await sh.act(Action(selector="#otp", method="fill", arguments=["%otp%"]), variables=variables)
    typed = await sh.page.input_value("#otp")
    await sh.page.evaluate("(v) => { document.title = 'Code ' + v; }", typed)  # the page echoes it
    await sh.observe("find the continue button", variables=variables)
    if totp:
        codes = {pyotp.TOTP(SEED).at(time.time() + step) for step in (-30, 0, 30)}
        assert re.fullmatch(r"\d{6}", typed) and typed in codes  # the code of the moment, not the seed
        assert SEED not in "".join(prompts) and typed not in "".join(prompts) and "%otp%" in "".join(prompts)
        assert redact_text(f"seed {SEED} code {typed}", variables) == "seed %otp% code %otp%"
        assert SEED not in repr(variables["otp"]) and SEED not in str(variables["otp"])
    else:
        assert typed == SEED  # the control: a plain seed is typed as it is


def test_a_secret_with_a_bad_seed_is_a_typed_error() -> None:
    from stagehand_py import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="base32"):
        Secret("not base32 !!", totp=True)
