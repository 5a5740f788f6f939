"""The hygiene behaviours inside a real run: stalls, budgets, failures, the breaker, history."""

from __future__ import annotations

import json
import socket

from pydantic import BaseModel

from stagehand_py import Stagehand
from stagehand_py._prompts.agent import FORCED_FINISH, LAST_STEP
from stagehand_py.llm import ImagePart

from ._script import AgentScript, call


async def test_stall_triggers_each_escalation_level_then_forces_finish(page, server):
    await page.goto(server.url("site/index.html"))
    # Eight steps that change nothing (same page, same action), then the only way out.
    script = AgentScript([call("think", thought="hmm")] * 8 + [call("fail", reason="stuck")])
    events = []
    result = await Stagehand(page, model=script).agent().execute("Find page 4", max_steps=20, callbacks=events.append)
    texts = [s.text for s in script.seen]
    # Step n's request reports the stall of the steps before it: 3 stalled -> step 4, 5 -> 6, 8 -> 9.
    levels = {i + 1: [lvl for lvl, word in ((1, "Notice: the last"), (2, "Warning: 5 steps"), (3, "Final warning: 8")) if word in t]
              for i, t in enumerate(texts)}
    assert {k: v for k, v in levels.items() if v} == {4: [1], 6: [2], 9: [3]}
    assert FORCED_FINISH in texts[8] and all(FORCED_FINISH not in t for t in texts[:8])
    assert script.seen[8].tool_names == ["done", "fail"]
    assert "think" in script.seen[7].tool_names
    stall_events = [e.data["level"] for e in events if e.type == "warning" and e.data["kind"] == "stall"]
    assert stall_events == [1, 2, 3]
    assert result.status == "failed" and result.message == "stuck"


class Parts(BaseModel):
    items: list[dict]
    complete: bool


async def test_step_budget_exhaustion_returns_partial_success_with_data(page, server, tmp_path):
    await page.goto(server.url("agent/list/1.html"))

    def save(s):
        names = [ln.split("StaticText: ")[1] for ln in s.outline.splitlines() if "StaticText: " in ln]
        return call("save_progress", data={"items": [{"name": n} for n in names if not n.startswith(("$", "Page"))]})

    consolidation_requests = []

    def consolidate(request):
        consolidation_requests.append(request)
        text = request.messages[-1].content[0].text
        data = json.loads(text.split("(collected data)\n", 1)[1].rsplit("\nEND UNTRUSTED", 1)[0])
        return {"items": data["items"], "complete": False}

    script = AgentScript(
        [save, lambda s: call("act", element_id=s.id("link", "Next page")), save,
         # Last step: done with an output that does not validate -> bounced, no steps left.
         call("done", message="finished", output={"items": "all of them"})],
        others={"agent_consolidate": consolidate},
    )
    checkpoint = tmp_path / "cp.json"
    result = await Stagehand(page, model=script).agent().execute(
        "Collect all parts", max_steps=4, output=Parts, checkpoint_path=checkpoint)
    assert "Budget warning: 75%" in script.seen[2].text
    assert all("Budget warning" not in s.text for s in script.seen[:2])
    assert LAST_STEP in script.seen[3].text and script.seen[3].tool_names == ["done", "fail"]
    assert result.status == "partial_success" and not result.success
    assert len(consolidation_requests) == 1
    assert isinstance(result.output, Parts) and [i["name"] for i in result.output.items] == [
        "Anchor", "Bolt", "Cable", "Drill", "Epoxy", "File"]
    assert len(result.data["items"]) == 6
    assert result.steps[-1].tool == "done" and not result.steps[-1].ok
    saved = json.loads(checkpoint.read_text())
    assert saved["status"] == "partial_success" and len(saved["data"]["items"]) == 6


async def test_wall_time_exhaustion_keeps_the_data(page, server):
    await page.goto(server.url("site/index.html"))
    script = AgentScript([call("save_progress", data={"seen": ["Page 1"]}), call("wait", seconds=10)])
    result = await Stagehand(page, model=script).agent().execute("Wait around", max_steps=10, timeout=1.5)
    assert result.status == "partial_success"
    assert "time budget" in result.message
    assert result.output == {"seen": ["Page 1"]} == result.data  # no output schema: the data itself


async def test_infrastructure_failures_trip_the_breaker(page, server):
    await page.goto(server.url("site/index.html"))
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    dead = f"http://127.0.0.1:{port}/nothing-listens-here"
    script = AgentScript([call("save_progress", data={"found": ["x"]})] + [call("goto", url=dead)] * 3)
    result = await Stagehand(page, model=script).agent().execute("Open the dead page", max_steps=10)
    assert result.status == "partial_success" and result.output == {"found": ["x"]}
    assert "circuit breaker: 3 infrastructure failures" in result.message and "ERR_CONNECTION_REFUSED" in result.message
    assert [s.error_kind for s in result.steps[1:]] == ["infrastructure"] * 3
    assert not script.steps  # the breaker stopped the run right after the third failure


async def test_after_three_failures_the_model_sees_the_actionable_elements(page, server):
    await page.goto(server.url("site/page2.html"))
    script = AgentScript([call("act", element_id="0-999999")] * 3 + [call("fail", reason="cannot")])
    result = await Stagehand(page, model=script).agent().execute("Click it", max_steps=10)
    assert [s.error_kind for s in result.steps[:3]] == ["logic"] * 3
    assert "not in the current outline" in result.steps[0].result
    assert all("tool calls failed" not in s.text for s in script.seen[:3])
    elements = script.seen[3].fenced("actionable elements")
    assert len(elements) == 1
    assert "link: Home" in elements[0] and "link: Next" in elements[0] and "heading" not in elements[0]


async def test_history_keeps_recent_steps_summarises_old_ones_and_drops_old_images(page, server):
    await page.goto(server.url("site/index.html"))
    pages = ["site/index.html", "site/page2.html", "site/page3.html"]
    steps = [call("screenshot")] + [call("goto", url=server.url(pages[i % 3])) for i in range(6)] + [call("done", message="ok")]
    script = AgentScript(steps)
    result = await Stagehand(page, model=script).agent(history_window=3, summarise_every=2).execute("Browse", max_steps=10)
    assert result.status == "done"
    images = [sum(isinstance(p, ImagePart) for m in s.request.messages for p in m.content) for s in script.seen]
    assert images == [0, 1, 0, 0, 0, 0, 0, 0]  # the screenshot is shown once, with the next step
    assert result.evidence.screenshots[0].sha256 and result.evidence.screenshots[0].size > 1000
    # One outline per request: the current one.
    assert all(len(s.fenced("page outline")) == 1 for s in script.seen)
    # Request 8 (7 steps before it): 4 oldest summarised in one line each, 3 recent in full.
    last = script.seen[7]
    summary = last.fenced("earlier steps, may quote pages")[0]
    assert summary.splitlines()[0].startswith("step 1: screenshot") and len(summary.splitlines()) == 4
    assert "Step 5: you called goto" in last.text and "Step 4: you called" not in last.text
    assert "reflection" not in last.text and "Your memory then" in last.text
    # Reflection fields are kept on every step.
    assert all(s.evaluation_previous_step == "ok" and s.next_goal for s in result.steps)
