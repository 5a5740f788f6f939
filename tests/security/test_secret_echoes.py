"""A page that echoes a secret back transformed (upper-cased, URL-encoded, split by zero-width
characters, base64, in full-width look-alike letters) must not get it into the next prompt. The control observes the same page
with no variables and finds every echo in the prompt, so the page really does echo them."""

from __future__ import annotations

import base64
import urllib.parse

import pytest

from stagehand_py import Action, Stagehand
from stagehand_py.testing import FunctionLLM, capture_requests

SECRET = "Hunter2-sekret"
FULL_WIDTH = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in SECRET)
ECHOES = [SECRET.upper(), SECRET.lower(), urllib.parse.quote(SECRET, safe=""), base64.b64encode(SECRET.encode()).decode(),
          "\u200b".join(SECRET), FULL_WIDTH]

PAGE = """<!doctype html><title>Echo</title><main><label>Password <input id=pw></label>
<p id=echo></p><script>
document.getElementById('pw').addEventListener('input', (e) => {
  const v = e.target.value;
  document.getElementById('echo').textContent = [v.toUpperCase(), v.toLowerCase(), encodeURIComponent(v), btoa(v),
    v.split('').join('\\u200b'), v.replace(/[!-~]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0xFEE0))].join(' | ');
});
</script></main>"""


def _user_text(call) -> str:
    return "\n".join(str(m.content) for m in call.request.messages if m.role == "user")


@pytest.mark.parametrize("with_variables", [True, False], ids=["redacted", "control-no-variables"])
async def test_transformed_echoes_of_a_secret_never_reach_a_prompt(page, with_variables: bool) -> None:
    await page.set_content(PAGE)
    sh = Stagehand(page, model=FunctionLLM(lambda request: {"elements": []}))
    if with_variables:
        await sh.act(Action(selector="#pw", method="fill", arguments=["%pw%"]), variables={"pw": SECRET})
    else:
        await page.fill("#pw", SECRET)  # typed by the user's own code: this Stagehand knows no secret
    with capture_requests() as calls:
        await sh.observe("find the echo", variables={"pw": SECRET} if with_variables else None)
    sent = _user_text(calls[0])
    found = [echo for echo in ECHOES if echo in sent or echo.replace("\u200b", "") in sent.replace("\u200b", "")]
    if with_variables:
        assert found == [] and "%pw%" in sent
    else:
        assert found == ECHOES  # the page does put every transformation on screen
