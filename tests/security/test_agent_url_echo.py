"""A GET form puts a typed secret into the URL (URL-encoded) and the page echoes it in its title:
neither the agent's next prompt, nor its checkpoint file, nor the result may carry it. The
control runs the same steps with a Stagehand that was not given the value."""

from __future__ import annotations

import json
import sys
import urllib.parse
from pathlib import Path

import pytest

from stagehand_py import Stagehand

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "agent"))
from _script import AgentScript, call  # noqa: E402  (tests/agent/_script.py: the scripted model)

SECRET = "ada lovelace@1815"
@pytest.mark.parametrize("with_variables", [True, False], ids=["redacted", "control-plain-text"])
async def test_a_secret_in_the_url_stays_out_of_prompts_checkpoint_and_result(page, search_site, tmp_path, with_variables: bool) -> None:
    await page.goto(search_site)
    typed = "%q%" if with_variables else SECRET
    script = AgentScript([
        lambda s: call("act", element_id=s.id("textbox", "Query"), method="fill", arguments=[typed]),
        lambda s: call("act", element_id=s.id("button", "Search")),
        call("done", message="searched"),
    ])
    checkpoint = tmp_path / "cp.json"
    result = await Stagehand(page, model=script).agent().execute(
        "Search for the person", max_steps=5, checkpoint_path=checkpoint, variables={"q": SECRET} if with_variables else None)
    assert "q=" in page.url  # the form did put the value in the URL
    forms = [SECRET, urllib.parse.quote_plus(SECRET), urllib.parse.quote(SECRET)]
    seen = "\n".join(s.text for s in script.seen) + checkpoint.read_text() + json.dumps(result.model_dump(mode="json"), default=str)
    leaked = [f for f in forms if f in seen]
    if with_variables:
        where = [(name, f) for name, text in (("prompts", "\n".join(s.text for s in script.seen)), ("checkpoint", checkpoint.read_text()),
                 ("result", json.dumps(result.model_dump(mode="json"), default=str))) for f in forms if f in text]
        assert leaked == [], where
        assert "%q%" in script.seen[-1].text
    else:
        assert urllib.parse.quote_plus(SECRET) in seen  # the URL really carries it to the model
