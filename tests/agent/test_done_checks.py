"""``done`` is checked before it is reported (issue 41): the three false ``done`` shapes of the
issue end ``unverified`` or get their one more turn, a right run stays ``done``, and
``verify=False`` reports what the model says.

Real Chromium on both page kinds, an issue tracker of static pages (tests/assets/agent/tracker:
40 issues, 8 of them open, a status filter after the table); the models are scripted. The
verdict's model reads the final page as a model would: 'yes' when a line shows the claim.
"""

from __future__ import annotations

import socket

from _server import Response
from pydantic import BaseModel

from stagehand_py.llm import LLMClient, LLMRequest

from ._script import AgentScript, call, chooser, page_verdict


class Count(BaseModel):
    count: int


class Priority(BaseModel):
    priority: str


class Title(BaseModel):
    title: str


OPEN_ISSUES = "How many open issues are there?"
PRIORITY = "Open the issue Crash number 15 and tell me its priority"
#: The verdict: the open issues are counted only on a page whose status filter shows Open.
FILTERED = page_verdict(lambda line: "combobox: Status value=" in line and "Open" in line)


def filter_open(s):
    return call("act", element_id=s.id("combobox", "Status"), method="select_option", arguments=["Open"])


async def on_the_tracker(new_stagehand, server, model, instruction: str, output: type[BaseModel], *, max_steps: int,
                         **options):
    """A run of ``instruction`` from the tracker's issue list; the result and the Stagehand."""
    sh = await new_stagehand(model=model)
    await sh.page.goto(server.url("agent/tracker/issues.html"))
    return await sh.agent(**options).execute(instruction, max_steps=max_steps, output=output), sh


async def set_urgent_with_a_side_page(new_stagehand, server, script, path: str, side: Response, *, max_steps: int):
    """The message-only task "Set the priority of Crash number 15 to Urgent" from the tracker's
    list, with ``side`` served at ``agent/<path>``, unverified by a verdict."""
    with server.route(f"/agent/{path}", lambda req: side):
        sh = await new_stagehand(model=script)
        await sh.page.goto(server.url("agent/tracker/issues.html"))
        return await sh.agent(self_check=False).execute("Set the priority of Crash number 15 to Urgent",
                                                        max_steps=max_steps)


async def test_a_count_read_off_the_unfiltered_table_ends_unverified(new_stagehand, server) -> None:
    # 40 is on the page ("Showing 40 issues"): the values pass; the verdict on the final page
    # says no; the model gets one more step past its budget of 1, repeats itself: unverified.
    script = AgentScript([call("done", message="counted", output={"count": 40}),
                          call("done", message="counted again", output={"count": 40})],
                         others={"agent_verdict": FILTERED})
    result, _ = await on_the_tracker(new_stagehand, server, script, OPEN_ISSUES, Count, max_steps=1, self_check=True)
    assert result.status == "unverified" and not result.success
    assert result.output == Count(count=40)  # the claim, kept
    assert "not verified: verdict: no" in result.message
    assert [s.tool for s in result.steps] == ["done", "done"] and not any(s.ok for s in result.steps)
    assert "done was not accepted" in script.seen[1].text and script.seen[1].tool_names == ["done", "fail"]
    values = [c for c in result.checks if c.check == "values"]
    assert all(c.passed for c in values) and values[0].values[0].how == "text" and values[0].values[0].step == 1
    assert [c.passed for c in result.checks if c.check == "verdict"] == [False, False]


async def test_a_count_read_off_the_filtered_table_is_done(new_stagehand, server) -> None:
    # The control: the filter applied, 8 read off the page it shows.
    script = AgentScript([filter_open, lambda s: call("act", element_id=s.id("button", "Apply")),
                          call("done", message="counted", output={"count": 8})],
                         others={"agent_verdict": FILTERED})
    result, _ = await on_the_tracker(new_stagehand, server, script, OPEN_ISSUES, Count, max_steps=4, self_check=True)
    assert result.status == "done" and result.success, result.message
    assert result.output == Count(count=8)
    assert [(c.check, c.passed) for c in result.checks] == [
        ("schema", True), ("values", True), ("final_state", None), ("agreement", None), ("verdict", True)]
    (read,) = result.checks[1].values
    assert (read.field, read.how, read.step) == ("$.count", "text", 3) and read.url.endswith("status=open&q=")
    assert 'combobox: Status value="Open"' in result.checks[4].evidence


async def test_a_count_its_own_message_contradicts_gets_one_more_turn(new_stagehand, server) -> None:
    # The embedded model's shape (benchmarks/local_agent_real_apps.py): {"count": 8} beside "There are
    # 40 open issues". Both numbers are on pages the run saw, so only their disagreement tells; the
    # one more turn states one count, and the claim that agrees with itself is done (the control).
    claim = "There are {} open issues."
    script = AgentScript([filter_open, lambda s: call("act", element_id=s.id("button", "Apply")),
                          call("done", message=claim.format(40), output={"count": 8}),
                          call("done", message=claim.format(8), output={"count": 8})])
    result, _ = await on_the_tracker(new_stagehand, server, script, OPEN_ISSUES, Count, max_steps=5, self_check=False)
    assert result.status == "done" and result.output == Count(count=8), result.message
    agreement = [c for c in result.checks if c.check == "agreement"]
    assert [(c.step, c.passed) for c in agreement] == [(3, False), (4, True)]
    assert agreement[0].detail == "the output says $.count = 8, but the run's messages state 40"
    assert "the output says $.count = 8, but the run's messages state 40" in script.seen[3].text
    assert all(c.passed for c in result.checks if c.check == "values")  # each number alone was on a page


async def test_a_count_read_off_a_number_the_page_shows_gets_one_more_turn(new_stagehand, server) -> None:
    # The embedded model's shape (the "open a record" and Django count tasks of
    # benchmarks/local_agent_real_apps.py): a count that is some number on the page ("Crash number
    # 15"), not the count the page states ("Showing 40 issues"). Bounced with how a count is read;
    # the model then filters and reports the count the page states: done (the control).
    script = AgentScript([call("done", message="15", output={"count": 15}),
                          filter_open, lambda s: call("act", element_id=s.id("button", "Apply")),
                          call("done", message="8", output={"count": 8})])
    result, _ = await on_the_tracker(new_stagehand, server, script, OPEN_ISSUES, Count, max_steps=5, self_check=False)
    assert result.status == "done" and result.output == Count(count=8), result.message
    values = [c for c in result.checks if c.check == "values"]
    assert [(c.step, c.passed) for c in values] == [(1, False), (4, True)]
    assert values[0].values[0].how == "missing" and "a count is read on the page the run ends on" in values[0].detail
    assert "a count is read on the page the run ends on" in script.seen[1].text
    assert (values[1].values[0].how, values[1].values[0].step) == ("text", 4)


async def test_a_count_read_on_another_page_than_the_last_gets_one_more_turn(new_stagehand, server) -> None:
    # The embedded model's shape (Datasette's search task): the count it reported was stated on a
    # page the run saw ("12 rows" of another table), not on the page it ended on. Here: 8, read on
    # the filtered list, claimed from an issue's page; back on the list, the same claim is done.
    script = AgentScript([filter_open, lambda s: call("act", element_id=s.id("button", "Apply")),
                          lambda s: call("act", element_id=s.id("link", "Crash number 15")),
                          call("done", message="8", output={"count": 8}),
                          call("goto", url=server.url("agent/tracker/issues.html?status=open&q=")),
                          call("done", message="8", output={"count": 8})])
    result, _ = await on_the_tracker(new_stagehand, server, script, OPEN_ISSUES, Count, max_steps=7, self_check=False)
    assert result.status == "done" and result.output == Count(count=8), result.message
    values = [c for c in result.checks if c.check == "values"]
    assert [(c.step, c.passed) for c in values] == [(4, False), (6, True)]
    assert "a count is read on the page the run ends on" in values[0].detail


async def test_a_value_reported_without_opening_its_page_gets_one_more_turn(new_stagehand, server) -> None:
    # "High" is on no page the run saw: the claim is bounced with that reason; the model then
    # opens the issue and reads its priority: done, the value's step recorded.
    script = AgentScript([
        call("done", message="read it", output={"priority": "High"}),
        lambda s: call("act", element_id=s.id("link", "Crash number 15")),
        call("done", message="read it", output={"priority": "Urgent"}),
    ])
    result, _ = await on_the_tracker(new_stagehand, server, script, PRIORITY, Priority, max_steps=5)
    assert result.status == "done", result.message
    assert result.output == Priority(priority="Urgent")
    first = next(c for c in result.checks if c.check == "values")
    assert first.step == 1 and first.passed is False and "'High' ($.priority)" in first.detail
    assert first.values[0].how == "missing" and first.values[0].step is None
    assert "not on any page the run saw: 'High'" in script.seen[1].text
    last = [c for c in result.checks if c.check == "values"][-1]
    assert last.passed and last.values[0].step == 3 and last.values[0].url.endswith("issue.html?id=15")


async def test_a_title_reported_from_another_page_gets_one_more_turn(new_stagehand, server) -> None:
    # The model read the issue's title, went back to the list and reported it from there: the
    # claim names a page the run reached but did not end on. On its one more turn it goes back.
    script = AgentScript([
        lambda s: call("act", element_id=s.id("link", "Crash number 15")),
        lambda s: call("act", element_id=s.id("link", "Issues")),
        call("done", message="the title", output={"title": "Crash number 15"}),
        lambda s: call("act", element_id=s.id("link", "Crash number 15")),
        call("done", message="the title", output={"title": "Crash number 15"}),
    ])
    result, sh = await on_the_tracker(new_stagehand, server, script,
                                      "Open the page of the issue Crash number 15 and tell me its title", Title, max_steps=6)
    assert result.status == "done", result.message
    first = next(c for c in result.checks if c.check == "final_state")
    assert first.step == 3 and first.passed is False
    assert "seen at step 2" in first.detail and "ended on 'Issues - Tracker'" in first.detail
    assert next(c for c in result.checks if c.check == "values").passed  # the value itself was on a page
    last = [c for c in result.checks if c.check == "final_state"][-1]
    assert last.step == 5 and last.passed and sh.page.url.endswith("issue.html?id=15")


async def test_a_count_whose_second_claim_drops_the_number_it_contradicted_ends_unverified(new_stagehand, server) -> None:
    # The embedded model's next move in the benchmark: bounced for "There are 40" beside 8, it kept
    # the 8 and said "counted". The 40 it stated stays stated: the run ends unverified (the test
    # above is the control: a second claim that states the 8 is done).
    script = AgentScript([filter_open, lambda s: call("act", element_id=s.id("button", "Apply")),
                          call("done", message="There are 40 open issues.", output={"count": 8}),
                          call("done", message="counted", output={"count": 8})])
    result, _ = await on_the_tracker(new_stagehand, server, script, OPEN_ISSUES, Count, max_steps=5, self_check=False)
    assert result.status == "unverified" and result.output == Count(count=8), result.message
    assert [(c.step, c.passed) for c in result.checks if c.check == "agreement"] == [(3, False), (4, False)]
    assert "not verified: agreement: the output says $.count = 8, but the run's messages state 40" in result.message


async def test_a_claim_made_on_a_page_that_did_not_load_gets_one_more_turn(new_stagehand, server) -> None:
    # The embedded model's shape (the docs task of benchmarks/local_agent_real_apps.py): it read the
    # value, then followed a link to a host that does not answer and called done on the browser's
    # error page. The value was on a page, so only the final state tells; back on the issue, the
    # same claim is done (the control: the check passes a claim made on a page that loaded).
    with socket.socket() as sock:  # a port free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/gone"
    away = Response.html(f'<h1>Elsewhere</h1><a href="{dead}">Mirror of the issue</a>')
    script = AgentScript([
        lambda s: call("act", element_id=s.id("link", "Crash number 15")),
        call("goto", url=server.url("agent/away.html")),
        lambda s: call("act", element_id=s.id("link", "Mirror of the issue")),
        call("done", message="read it", output={"priority": "Urgent"}),
        call("goto", url=server.url("agent/tracker/issue.html?id=15")),
        call("done", message="read it", output={"priority": "Urgent"}),
    ])
    with server.route("/agent/away.html", lambda req: away):
        result, sh = await on_the_tracker(new_stagehand, server, script, PRIORITY, Priority, max_steps=7,
                                          self_check=False)
    assert result.status == "done" and result.output == Priority(priority="Urgent"), result.message
    states = [c for c in result.checks if c.check == "final_state"]
    assert [(c.step, c.passed) for c in states] == [(4, False), (6, None)]
    assert states[0].evidence.startswith("chrome-error:") and "did not load" in script.seen[4].text
    assert sh.page.url.endswith("issue.html?id=15")


async def test_a_task_claimed_done_on_a_page_that_shows_none_of_it_gets_one_more_turn(new_stagehand, server) -> None:
    # The embedded model's shape (the create task of benchmarks/local_agent_real_apps.py): a claim
    # with no output, made on a page that shows nothing it names (the form was never saved). Back
    # on the issue, which shows its priority, the same claim is done (the control).
    claim = "Set the issue Crash number 15 to priority Urgent"
    script = AgentScript([
        call("goto", url=server.url("agent/away.html")),
        call("done", message=claim),
        call("goto", url=server.url("agent/tracker/issue.html?id=15")),
        call("done", message=claim),
    ])
    away = Response.html("<h1>Elsewhere</h1><p>Nothing here.</p>")
    result = await set_urgent_with_a_side_page(new_stagehand, server, script, "away.html", away, max_steps=5)
    assert result.status == "done", result.message
    states = [c for c in result.checks if c.check == "final_state"]
    assert [(c.step, c.passed) for c in states] == [(2, False), (4, True)]
    assert "does not show" in states[0].detail and "'Urgent'" in states[0].detail
    assert "does not show" in script.seen[2].text


async def test_a_task_claimed_done_on_its_unsaved_form_gets_one_more_turn(new_stagehand, server) -> None:
    # The embedded model's shape (Django's create task in benchmarks/local_agent_real_apps.py): it
    # typed the name into the form, never saved, and claimed done there. The name is on the page
    # only as the field's value, the priority only as a select's option: not shown. Back on the
    # issue, which shows them in its text, the same claim is done (the control).
    form = Response.html("<h1>Edit issue</h1><form><label>Summary <input name=s></label>"
                         "<label>Priority <select name=p><option>Low</option><option>Urgent</option></select></label>"
                         "<button type=button>Save</button></form>")
    claim = "Set the issue Crash number 15 to priority Urgent"
    script = AgentScript([
        call("goto", url=server.url("agent/edit.html")),
        lambda s: call("act", element_id=s.id("textbox", "Summary"), method="fill", arguments=["Crash number 15"]),
        call("done", message=claim),
        call("goto", url=server.url("agent/tracker/issue.html?id=15")),
        call("done", message=claim),
    ])
    result = await set_urgent_with_a_side_page(new_stagehand, server, script, "edit.html", form, max_steps=6)
    assert result.status == "done", result.message
    states = [c for c in result.checks if c.check == "final_state"]
    assert [(c.step, c.passed) for c in states] == [(3, False), (5, True)]
    assert "does not show" in states[0].detail and "edit.html" in states[0].evidence


async def test_verify_off_reports_the_claim_as_the_model_says(new_stagehand, server) -> None:
    # The control of the three above: the same false claims, verify=False: done, unchecked.
    script = AgentScript([call("done", message="read it", output={"priority": "High"})])
    result, _ = await on_the_tracker(new_stagehand, server, script, PRIORITY, Priority, max_steps=3, verify=False,
                                     self_check=True)
    assert result.status == "done" and result.output == Priority(priority="High")
    assert result.checks == [] and len(script.seen) == 1  # no verdict was asked


async def test_a_small_model_s_verdict_is_one_short_request(new_stagehand, server) -> None:
    seen: list[LLMRequest] = []
    model = LLMClient(chooser([("select: Status = Open", ""), ("click: button: Apply", ""), ("done", "8 open issues")],
                              seen, others={"agent_output": lambda r: {"count": 8}, "agent_verdict": FILTERED}),
                      choice_mode=True)
    result, _ = await on_the_tracker(new_stagehand, server, model, OPEN_ISSUES, Count, max_steps=4, self_check=True)
    assert result.status == "done" and result.output == Count(count=8), result.message
    (request,) = [r for r in seen if r.purpose == "agent_verdict"]
    text = "\n".join(p.text for m in request.messages for p in m.content)
    assert "lines of the page" in text and "page outline" not in text  # the lines, not the page
    shown = [line for line in text.split("lines of the page)\n", 1)[1].split("\nEND UNTRUSTED", 1)[0].splitlines()]
    assert 1 <= len(shown) <= 12 and any("Status value='Open'" in line for line in shown)
    assert len(text) < 4000
