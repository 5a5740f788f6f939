"""The run viewer of an agent run and of a batch row, opened from disk in a real browser, and an
agent run's steps as groups of its Playwright trace (``_checks.check_run_html`` says what is checked).

One scripted run per case feeds every assertion: sign in (the username and the password are
variables, the password the canary), then ``done``.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from _canary import CANARY, ENCODINGS, found_in
from agent._script import AgentScript, call

from stagehand_py import Stagehand
from stagehand_py._viewer._show import main as show
from stagehand_py.batch import SampleContext, SampleOutcome, run_batch
from stagehand_py.batch._spec import Sample, TaskSpec

from ._checks import SIGN_IN, check_run_html, rects_of

VARIABLES = {"user": "ada", "pw": CANARY}


def sign_in_script() -> AgentScript:
    return AgentScript([
        lambda s: call("act", element_id=s.id("textbox", "Username"), method="fill", arguments=["%user%"]),
        lambda s: call("act", element_id=s.id("textbox", "Password"), method="fill", arguments=["%pw%"]),
        lambda s: call("act", element_id=s.id("button", "Sign in")),
        lambda s: call("done", message="signed in as %user%", output=None),
    ])


def groups_of(zip_path: Path) -> dict[str, str | None]:
    """Each group title of the trace, with its parent group's title."""
    with zipfile.ZipFile(zip_path) as archive:
        events = [json.loads(line) for line in archive.read("trace.trace").decode().splitlines() if line.strip()]
    titles = {e["callId"]: e["title"] for e in events if e.get("method") == "tracingGroup" and e.get("type") == "before"}
    return {e["title"]: titles.get(e.get("parentId")) for e in events
            if e.get("method") == "tracingGroup" and e.get("type") == "before"}


async def test_an_agent_run_leaves_a_run_html_and_names_its_steps_in_the_trace(new_stagehand, browser, tmp_path,
                                                                                page_kind, capsys) -> None:
    evidence, trace = tmp_path / "evidence", tmp_path / "trace.zip"
    sh: Stagehand = await new_stagehand(model=sign_in_script(), trace="on", trace_path=trace)
    await sh.__aenter__()
    await sh.page.set_content(SIGN_IN)
    result = await sh.agent(evidence_dir=evidence).execute("Sign in", variables=VARIABLES)
    rects = await rects_of(sh.page)
    await sh.close()
    assert result.status == "done" and len(result.steps) == 4

    titles = await check_run_html(browser, evidence / "run.html", steps=len(result.steps), rects=rects)
    assert [t.split(" ok")[0] for t in titles] == ["#1 agent step 1: fill Username", "#2 agent step 2: fill Password",
                                                   "#3 agent step 3: click Sign in", "#4 agent step 4: done"]
    page = (evidence / "run.html").read_text()
    assert "%pw%" in page and "next_goal" in page and "fill on xpath=" in page  # placeholders, answer, what was sent

    groups = groups_of(trace)
    assert groups["agent step 2: fill Password"] is None
    assert groups['act: fill "%pw%" "textbox: Password" [0-9]'] == "agent step 2: fill Password"
    assert found_in(trace) == dict.fromkeys(ENCODINGS, 0)

    assert show([str(evidence)]) == 0
    printed = capsys.readouterr().out
    assert "Sign in — done — 4 steps" in printed and "agent step 3: click Sign in" in printed


async def test_a_batch_row_leaves_a_run_html_and_a_trace_linked_from_the_report(browser, server, tmp_path) -> None:
    rects: dict[str, tuple[float, float, float, float]] = {}
    steps: list[int] = []

    async def sign_in(ctx: SampleContext) -> SampleOutcome:
        sh = Stagehand(ctx.page, model=sign_in_script())
        await ctx.page.set_content(SIGN_IN)
        result = await sh.agent().execute("Sign in", variables=VARIABLES)
        rects.update(await rects_of(ctx.page))
        steps.append(len(result.steps))
        return SampleOutcome(status=result.status)

    spec = TaskSpec(goal="Sign in", trace="on")
    batch = await run_batch([Sample(id="row-1", url=server.url("forms.html"))], spec=spec, runner=sign_in,
                            browser=browser, run_dir=tmp_path / "run")
    row = tmp_path / "run" / "row-1"
    assert batch.results["row-1"]["status"] == "done" and sorted(p.name for p in row.iterdir()) == [
        "action_log.json", "checkpoint.json", "result.json", "run.html", "trace.zip"]
    await check_run_html(browser, row / "run.html", steps=steps[0], rects=rects)
    assert "agent step 1: fill Username" in groups_of(row / "trace.zip")
    from stagehand_py.batch._report import write_report_html

    report = Path(write_report_html(tmp_path / "run", batch.results)).read_text()
    assert 'href="row-1/run.html"' in report and 'href="row-1/trace.zip"' in report
