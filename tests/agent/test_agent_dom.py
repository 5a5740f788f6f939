"""The DOM agent on real local pages, driven by scripted models that read the outline."""

from __future__ import annotations

import json
import logging

import pytest
from pydantic import BaseModel

from stagehand_py import AgentError, Stagehand
from stagehand_py.agent import AgentResult
from stagehand_py.testing import capture_requests

from ._script import AgentScript, all_text, call


class Signup(BaseModel):
    name: str
    plan: str


EMAIL = "ada-CANARY-7f3e@example.test"


async def test_three_page_wizard_completed(page, server, tmp_path, caplog):
    caplog.set_level(logging.DEBUG, logger="stagehand_py")
    script = AgentScript([
        call("goto", url=server.url("wizard/step1.html")),
        lambda s: call("act", element_id=s.id("textbox", "Full name"), method="fill", arguments=["Ada Lovelace"]),
        lambda s: call("act", element_id=s.id("button", "Continue")),
        # Step 2: the email is a variable; the model writes only its placeholder.
        lambda s: call("fill_form", fields=[{"element_id": s.id("textbox", "Email"), "value": "%email%"}]),
        lambda s: call("act", element_id=s.id("button", "Continue")),
        lambda s: call("act", element_id=s.id("combobox", "Plan"), method="select_option", arguments=["Premium"]),
        lambda s: call("act", element_id=s.id("checkbox", "I accept the terms"), method="check"),
        lambda s: call("act", element_id=s.id("button", "Finish")),
        lambda s: call("done", message="signed up", output={"name": "Ada Lovelace", "plan": "premium"}),
    ])
    sh = Stagehand(page, model=script)
    events = []
    checkpoint = tmp_path / "wizard.json"
    with capture_requests() as calls:
        result = await sh.agent().execute(
            "Sign up Ada Lovelace on the premium plan",
            variables={"email": {"value": EMAIL, "description": "the user's email"}},
            output=Signup, max_steps=12, callbacks=events.append, checkpoint_path=checkpoint,
        )
    assert result.status == "done" and result.success, result.message
    assert result.output == Signup(name="Ada Lovelace", plan="premium")
    assert [s.tool for s in result.steps] == ["goto", "act", "act", "fill_form", "act", "act", "act", "act", "done"]
    assert all(s.ok for s in result.steps)
    # The browser really got there, with the real email.
    assert page.url.split("?")[0].endswith("wizard/done.html")
    assert await page.inner_text("#summary-email") == EMAIL
    assert await page.inner_text("#summary-plan") == "premium"
    # The model saw the placeholder and its description, never the value -- even on the done
    # page, whose outline shows the email.
    assert "%email%: the user's email" in script.seen[0].text
    assert "%email%" in script.seen[-1].outline
    # Canary: not in any model request, the result, the events, the checkpoint, or the logs.
    assert calls and all(EMAIL not in all_text(c.request) for c in calls)
    assert EMAIL not in result.model_dump_json()
    assert all(EMAIL not in e.model_dump_json() for e in events)
    assert EMAIL not in checkpoint.read_text()
    assert EMAIL not in caplog.text and "agent step" in caplog.text
    # Events: one step_started per step, tool call/result pairs, usage, a final checkpoint, finished last.
    types = [e.type for e in events]
    assert types.count("step_started") == 9 and types.count("tool_call") == 9 and types.count("tool_result") == 9
    assert types.count("model_usage") == 9
    assert types[-1] == "finished" and events[-1].result == result
    assert json.loads(checkpoint.read_text())["status"] == "done"
    assert result.usage.requests == 10  # nine steps, and the verdict on the final page (self_check)
    assert [c.check for c in result.checks if c.passed] == ["schema", "values", "verdict"]


async def test_paginated_list_collected_with_save_progress(page, server, tmp_path):
    def save_page(s):
        items = [line.split("StaticText: ", 1)[1] for line in s.outline.splitlines() if "StaticText: " in line]
        names = [i for i in items if not i.startswith("$") and not i.startswith("Page ")]
        prices = [i for i in items if i.startswith("$")]
        return call("save_progress", data={"items": [{"name": n, "price": p} for n, p in zip(names, prices)], "pages_seen": 1})

    steps = [call("goto", url=server.url("agent/list/1.html"))]
    for _ in range(3):
        steps += [save_page, lambda s: call("act", element_id=s.id("link", "Next page"))]
    steps += [save_page, lambda s: call("done", message="collected", output=None)]
    script = AgentScript(steps)
    checkpoint = tmp_path / "list.json"
    seen_checkpoints = []

    def on_event(event):
        if event.type == "checkpoint" and event.data["reason"] == "save_progress":
            seen_checkpoints.append(json.loads(checkpoint.read_text())["data"])

    sh = Stagehand(page, model=script)
    result = await sh.agent().execute("Collect every part with its price", max_steps=15,
                                      checkpoint_path=checkpoint, callbacks=on_event)
    assert result.status == "done", result.message
    names = [i["name"] for i in result.data["items"]]
    assert names == ["Anchor", "Bolt", "Cable", "Drill", "Epoxy", "File", "Gasket", "Hinge", "Insulation", "Jigsaw", "Knob", "Latch"]
    assert result.data["items"][-1] == {"name": "Latch", "price": "$42.00"}
    assert result.data["pages_seen"] == 1  # scalars replace, arrays append
    # A checkpoint file was written at each save, growing page by page.
    assert [len(c["items"]) for c in seen_checkpoints] == [3, 6, 9, 12]
    assert [c.reason for c in result.evidence.checkpoints] == ["save_progress"] * 4 + ["finished: done"]
    assert all(c.path == str(checkpoint) for c in result.evidence.checkpoints)


async def test_script_errors_surface_as_agent_error(page, server):
    sh = Stagehand(page, model=AgentScript([]))
    await page.goto(server.url("site/index.html"))
    with pytest.raises(AgentError, match="ran out"):
        await sh.agent().execute("anything", max_steps=3)


async def test_bad_arguments_are_rejected(page):
    sh = Stagehand(page, model=AgentScript([]))
    agent = sh.agent()
    with pytest.raises(ValueError, match="instruction"):
        await agent.execute("  ")
    with pytest.raises(ValueError, match="max_steps"):
        await agent.execute("x", max_steps=0)
    with pytest.raises(ValueError, match="mode"):
        sh.agent(mode="vision")  # type: ignore[arg-type]
    assert isinstance(AgentResult(success=True, status="done", message=""), AgentResult)
