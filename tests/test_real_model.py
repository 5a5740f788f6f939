"""The main job end to end with a real model: the embedded Qwen2.5-Coder-1.5B on this CPU.

observe with %placeholders% -> check the plan -> act it -> extract into a pydantic model, on a
small local page, on a page we launched and on a page the user launched (`Stagehand(page=page)`);
and examples/agent_example.py as a user with no key runs it (agent() through choice steps).
`bash scripts/setup.sh` fetches the model, so this runs in CI; it skips with the reason only when
the model or the engine is absent. The rest of the suite scripts the model.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from _browser import new_stagehand_of_kind
from llm._local_model import require_local_model
from playwright.async_api import BrowserContext
from pydantic import BaseModel

from stagehand_py import Stagehand, Variables, placeholders_in
from stagehand_py.llm import LocalModel

MODEL = require_local_model()
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
pytestmark = pytest.mark.real_model

FORM = """<!doctype html><title>Sign in</title><main><h1>Members area</h1>
<form onsubmit="event.preventDefault(); document.getElementById('status').textContent =
  'Signed in as ' + this.user.value + (this.pw.value === 'pw-canary-91' ? ' (password ok)' : ' (bad password)')">
<label>Username <input name=user></label> <label>Password <input name=pw type=password></label>
<button>Sign in</button></form><p id=status role=status></p>
<h2>Plans</h2><ul><li>Basic: $5 per month</li><li>Pro: $12 per month</li></ul></main>"""


@pytest.fixture
def model(embedded_model: LocalModel) -> LocalModel:
    """The session's engine (tests/conftest.py), as a user's process has one: loaded once, and
    llama.cpp's prompt cache keeps each verb's system prompt from the launched page to the wrapped
    one and the agent (the example's `local/...` model has the same file and settings, so it shares
    this engine)."""
    return embedded_model


class Plan(BaseModel):
    name: str
    price: str


class Plans(BaseModel):
    plans: list[Plan]


@pytest.mark.parametrize("kind", ["launched", "wrapped"])
async def test_observe_act_extract_with_the_embedded_model(kind: str, context: BrowserContext,
                                                          launched_stagehand: Stagehand, model: LocalModel) -> None:
    async with contextlib.AsyncExitStack() as made:
        sh = await new_stagehand_of_kind(made, kind, context, launched_stagehand, model=model, token_budget=6000)
        await sh.page.set_content(FORM)
        variables: Variables = {"username": "ada", "password": {"value": "pw-canary-91", "description": "the password"}}
        plan = await sh.observe("fill in the username and the password", variables=variables)
        filled = {name for action in plan for name in placeholders_in(action.arguments)}
        assert {"username", "password"} <= filled, plan
        assert all(a.method in ("fill", "type", "click") for a in plan), plan
        for action in plan:
            await sh.act(action, variables=variables)
        assert await sh.page.input_value("input[name=user]") == "ada"
        result = await sh.act("click the Sign in button")
        assert result.success, result
        # The plan may already have submitted the form; either way the one submit button was used.
        assert await sh.page.inner_text("#status") == "Signed in as ada (password ok)", (plan, result)
        plans = await sh.extract("the plans and their prices", schema=Plans)
        assert {(p.name, p.price.replace(" per month", "")) for p in plans.plans} >= {("Basic", "$5"), ("Pro", "$12")}
        assert sh.metrics.total.requests >= 3


@pytest.mark.usefixtures("model")  # the engine the verbs' tests loaded, not a second load
async def test_the_agent_example_completes_with_the_embedded_model_and_no_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    # What a new user gets from `python examples/agent_example.py` with no key: the embedded model
    # drives agent() through choice steps to the products page and fills the output model.
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "STAGEHAND_BASE_URL", "STAGEHAND_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("STAGEHAND_LOCAL_MODEL", str(MODEL))
    monkeypatch.syspath_prepend(str(EXAMPLES))
    import agent_example

    assert await agent_example.main(checkpoint_dir=str(tmp_path)) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "model: local/" in out and "status: done" in out, out
    for product in ("Trail Runner Shoes: $89.00", "Canvas Backpack: $54.50", "Steel Water Bottle: $19.99",
                    "Rain Shell Jacket: $120.00"):
        assert product in out, out
    assert json.loads((tmp_path / "checkpoint.json").read_text())["status"] == "done"
