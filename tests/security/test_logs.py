"""Log records at every level (DEBUG included) never carry a variable's value: an agent types a
secret into a GET form, so the value sits in the URL (URL-encoded) and in the page's title, and
the page echoes it; every record of the library's loggers is checked. The control runs the same
flow with a Stagehand not given the value and finds it in the records."""

from __future__ import annotations

import logging
import sys
import urllib.parse
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "agent"))
from _script import AgentScript, call  # noqa: E402  (tests/agent/_script.py: the scripted model)

SECRET = "ada lovelace@1815"
FORMS = [SECRET, urllib.parse.quote_plus(SECRET), urllib.parse.quote(SECRET), SECRET.upper()]
@pytest.mark.parametrize("with_variables", [True, False], ids=["redacted", "control-plain-text"])
async def test_no_log_record_carries_the_value(new_stagehand, search_site, server, caplog, with_variables: bool) -> None:
    typed = "%q%" if with_variables else SECRET
    script = AgentScript([
        lambda s: call("act", element_id=s.id("textbox", "Query"), method="fill", arguments=[typed]),
        lambda s: call("act", element_id=s.id("button", "Search")),
        lambda s: call("goto", url="http://blocked.invalid/?q=" + urllib.parse.quote(SECRET)),
        call("done", message="searched"),
    ])
    sh = await new_stagehand(model=script)
    await sh.page.goto(search_site)
    caplog.set_level(logging.DEBUG, logger="stagehand_py")
    await sh.agent(allowed_domains=[f"127.0.0.1:{server.port}"]).execute(
        "Search for the person", max_steps=6, variables={"q": SECRET} if with_variables else None)
    assert "q=" in sh.page.url  # the form did put the value in the URL
    records = [f"{r.name} {r.levelname}: {r.getMessage()}" for r in caplog.records if r.name.startswith("stagehand_py")]
    leaked = [line for line in records if any(f in line for f in FORMS)]
    if with_variables:
        assert leaked == [], leaked
    else:
        assert leaked  # the records do carry it when the value is not known as a secret
