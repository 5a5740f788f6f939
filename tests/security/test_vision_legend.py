"""The vision fallback's screenshot legend lists outline lines; a field holding a secret typed a
moment ago must show there as the placeholder, as in the outline. The control sends the same
request without the variable and finds the value, so the legend really carries field values."""

from __future__ import annotations

import pytest

from stagehand_py import Action, Stagehand
from stagehand_py.testing import ScriptedLLM, capture_requests

NOTHING = {"elements": []}
SECRET = "Tr0ub4dor-9"
PAGE = "<!doctype html><label>Account code <input id=code></label><button>Save</button>"


@pytest.mark.parametrize("knows_secret", [True, False], ids=["redacted", "control-unknown-value"])
async def test_the_screenshot_legend_never_shows_a_secret(page, knows_secret: bool) -> None:
    await page.set_content(PAGE)
    sh = Stagehand(page, model=ScriptedLLM([NOTHING]))
    if knows_secret:
        await sh.act(Action(selector="#code", method="fill", arguments=["%code%"]), variables={"code": SECRET})
    else:
        await page.fill("#code", SECRET)
    with capture_requests() as calls:
        await sh.observe("the save button", vision=True)
    text = "\n".join(str(m.content) for m in calls[0].request.messages)
    assert "Screenshot legend" in text
    if knows_secret:
        assert SECRET not in text and "%code%" in text
    else:
        assert SECRET in text
