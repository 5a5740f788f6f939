"""More exits and inputs of the class: the action cache's file must not keep a secret an element's
name echoes, and a model answer nested deeper than Python's parser can go is a typed error, not a
RecursionError. Each with a control showing the unsafe outcome is real."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from stagehand_py import Action, StagehandError
from stagehand_py.llm import LLMClient
from stagehand_py.testing import FunctionLLM, ScriptedLLM

SECRET = "Hunter2-sekret"
PAGE = """<!doctype html><title>Sign in</title><main><label>Password <input id=pw></label>
<button id=go>Continue</button><script>
document.getElementById('pw').addEventListener('input', (e) => {
  document.getElementById('go').textContent = 'Continue as ' + e.target.value.toUpperCase(); });
</script></main>"""


def _pick_continue(request) -> dict:
    text = "\n".join(str(m.content) for m in request.messages)
    m = re.search(r"\[(\d+-\d+)\] button: (Continue[^\n]*)", text)
    assert m, "the page shows the button"
    return {"elements": [{"element_id": m.group(1), "description": f"button: {m.group(2)}", "method": "click", "arguments": []}],
            "opens_options": False}


@pytest.mark.parametrize("with_variables", [True, False], ids=["redacted", "control-no-variables"])
async def test_the_action_cache_never_stores_a_secret_an_element_name_echoes(new_stagehand, tmp_path: Path,
                                                                             with_variables: bool) -> None:
    sh = await new_stagehand(model=FunctionLLM(_pick_continue), cache_dir=tmp_path)
    await sh.page.set_content(PAGE)
    variables = {"pw": SECRET} if with_variables else None
    if with_variables:
        await sh.act(Action(selector="#pw", method="fill", arguments=["%pw%"]), variables=variables)
    else:
        await sh.page.fill("#pw", SECRET)  # typed by the user's own code: the Stagehand knows no secret
    assert (await sh.act("continue", variables=variables)).success
    stored = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    assert stored, "the act was cached"
    if with_variables:
        assert SECRET.upper() not in stored and SECRET not in stored and "%pw%" in stored
    else:
        assert SECRET.upper() in stored  # the element's name does carry the value into the cache


class Tree(BaseModel):
    items: list[object]


def test_control_pythons_parser_fails_on_a_deep_answer() -> None:
    with pytest.raises(RecursionError):
        json.loads('{"items": ' + "[" * 100_000 + "]" * 100_000 + "}")


async def test_a_deeply_nested_answer_is_a_typed_error() -> None:
    deep = '{"items": ' + "[" * 100_000 + "]" * 100_000 + "}"
    client = LLMClient(ScriptedLLM([deep] * 3))
    with pytest.raises(StagehandError):
        await client.generate("list the items", output=Tree, max_reasks=1)
