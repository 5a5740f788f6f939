"""A variable name given again with another value: both values stay out of every later prompt.

The page keeps showing the first value (a profile page echoing an old password, a field not yet
cleared); a Stagehand that only remembered the latest value per name sent the first one to the
model in plain text.
"""

from __future__ import annotations

import pytest
from _server import Response
from operations._ops import prompt_text
from playwright.async_api import Page

from stagehand_py import Stagehand
from stagehand_py.testing import FunctionLLM, capture_requests

PAGE = ("<!DOCTYPE html><html><body><h1>Account</h1><p>Old password: alpha-secret-1</p>"
        "<p>New password: beta-secret-2</p><button>Save</button></body></html>")


@pytest.mark.parametrize("wrapped", [True, False], ids=["wrapped", "launched"])
async def test_an_earlier_value_of_a_reused_name_is_still_redacted(wrapped: bool, page: Page, server) -> None:
    model = FunctionLLM(lambda r: {"elements": []})
    with server.route("/account.html", lambda req: Response.html(PAGE)):
        sh = Stagehand(page, model=model) if wrapped else await Stagehand.launch(model=model)
        control = Stagehand(sh.page, model=model)  # never told any value
        try:
            await sh.page.goto(server.url("account.html"))
            with capture_requests() as calls:
                await sh.observe("the save button", variables={"pw": "alpha-secret-1"}, vision=False)
                await sh.observe("the save button", variables={"pw": "beta-secret-2"}, vision=False)
                await sh.observe("the save button", vision=False)
                await control.observe("the save button", vision=False)
            *ours, theirs = [prompt_text(c.request) for c in calls]
            for sent in ours[1:]:
                assert "alpha-secret-1" not in sent and "beta-secret-2" not in sent, sent
                assert "%pw_was1%" in sent and "%pw%" in sent
            # Control: the page does carry both values to a model that was not told to hide them.
            assert "alpha-secret-1" in theirs and "beta-secret-2" in theirs
        finally:
            if not wrapped:
                await sh.close()
