"""Long-horizon options of the agent (issue 8), each with a scripted model on local pages:
pagination budget, expected_items, multi-action steps, fallback model, memory notes."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
from llm._fake_provider import FakeProvider, chat_completion, error_body

from stagehand_py import RateLimitError, Stagehand
from stagehand_py.agent.hygiene import (
    batch_abort_reason,
    is_pagination_control,
    item_count,
)
from stagehand_py.llm import LLMClient, LLMRequest, RetryPolicy
from stagehand_py.testing import FunctionLLM

from ._script import AgentScript, Seen, call

FAST = RetryPolicy(max_retries=2, initial_backoff=0.001, max_backoff=0.002, jitter=0)


def save_page(s: Seen) -> dict:
    items = [line.split("StaticText: ", 1)[1] for line in s.outline.splitlines() if "StaticText: " in line]
    names = [i for i in items if not i.startswith(("$", "Page ", "Last page"))]
    return call("save_progress", data={"items": names})


def next_page(s: Seen) -> dict:
    return call("act", element_id=s.id("link", "Next page"))


async def test_pagination_grants_bounded_bonus_steps_and_expected_items_says_finish(page, server):
    # 4 pages of 3 parts: goto + 4 saves + 3 next clicks + done = 9 steps, with max_steps=4.
    steps = [call("goto", url=server.url("agent/list/1.html"))]
    for _ in range(3):
        steps += [save_page, next_page]
    steps += [save_page, lambda s: call("done", message="all parts", output=None)]
    script = AgentScript(steps)
    events = []
    agent = Stagehand(page, model=script).agent(pagination_bonus_steps=2, max_pagination_bonus=5, expected_items=12)
    result = await agent.execute("Collect every part", max_steps=4, callbacks=events.append)
    assert result.status == "done", result.message
    assert len(result.data["items"]) == 12 and len(result.steps) == 9
    bonuses = [e.data for e in events if e.type == "warning" and e.data.get("kind") == "pagination_bonus"]
    assert [(b["bonus"], b["max_steps"]) for b in bonuses] == [(2, 6), (2, 8), (1, 9)]  # capped at 5 in all
    assert "2 bonus step(s) granted" in result.steps[2].result
    assert "Step 4 of 6." in script.seen[3].text and "Step 9 of 9." in script.seen[8].text
    # Told to finish only once the 12th item was saved.
    told = [i for i, s in enumerate(script.seen, start=1) if "the task expects 12" in s.text]
    assert told == [9]


async def test_pagination_budget_is_off_by_default(page, server):
    script = AgentScript([call("goto", url=server.url("agent/list/1.html")), save_page, next_page,
                          lambda s: call("done", message="out of steps")])
    result = await Stagehand(page, model=script).agent().execute("Collect every part", max_steps=4)
    assert result.status == "done" and len(result.steps) == 4
    assert "bonus" not in result.steps[2].result and "Step 4 of 4." in script.seen[3].text
    assert script.seen[3].tool_names == ["done", "fail"]


async def test_done_with_fewer_items_than_expected_is_partial_success(page, server):
    script = AgentScript([
        call("goto", url=server.url("agent/list/1.html")),
        save_page,
        lambda s: call("done", message="got them", output={"items": ["Anchor", "Bolt", "Cable"]}),
    ])
    agent = Stagehand(page, model=script).agent(expected_items=5)
    result = await agent.execute("Collect five parts", max_steps=6)
    assert result.status == "partial_success" and not result.success
    assert result.output == {"items": ["Anchor", "Bolt", "Cable"]}
    assert "3 of 5 expected items" in result.message
    assert not any("the task expects" in s.text for s in script.seen)


async def test_multi_action_chain_runs_each_action_as_a_step_and_stops_at_navigation(page, server, caplog):
    caplog.set_level(logging.INFO, logger="stagehand_py")
    chained = {}

    def chain(s: Seen) -> dict:
        name, cont = s.id("textbox", "Full name"), s.id("button", "Continue")
        chained["schema"] = s.request.output_schema["properties"]["more_actions"]
        answer = call("act", element_id=name, method="fill", arguments=["Ada"])
        answer["more_actions"] = [
            {"tool": "act", "args": {"element_id": cont}},
            {"tool": "act", "args": {"element_id": name, "method": "fill", "arguments": ["never typed"]}},
        ]
        return answer

    script = AgentScript([
        call("goto", url=server.url("wizard/step1.html")),
        chain,
        lambda s: call("done", message=f"on {s.id('textbox', 'Email')}"),
    ])
    events = []
    agent = Stagehand(page, model=script).agent(multi_action=True)
    result = await agent.execute("Enter the name Ada and continue", max_steps=8, callbacks=events.append)
    assert result.status == "done", result.message
    assert chained["schema"]["maxItems"] == 2
    assert "chain up to 3 actions" in script.seen[1].system
    # Two of the three chained actions ran, each its own step; the third was dropped on navigation.
    assert [(s.step, s.tool, s.chain) for s in result.steps] == [
        (1, "goto", None), (2, "act", (1, 3)), (3, "act", (2, 3)), (4, "done", None)]
    assert all(s.ok for s in result.steps)
    assert page.url.split("?")[0].endswith("wizard/step2.html") and "name=Ada" in page.url
    aborted = [e.data for e in events if e.type == "warning" and e.data.get("kind") == "multi_action_aborted"]
    assert aborted == [{"kind": "multi_action_aborted", "reason": "the page navigated", "skipped": ["act"], "ran": 2, "chained": 3}]
    assert "chained actions were stopped because the page navigated" in script.seen[2].text
    assert [e.type for e in events].count("step_started") == 4
    assert "multi-action chain stopped after 2 of 3 actions" in caplog.text


async def test_multi_action_is_off_by_default(page, server):
    script = AgentScript([lambda s: call("done", message="x")])
    await page.goto(server.url("wizard/step1.html"))
    await Stagehand(page, model=script).agent().execute("x", max_steps=2)
    assert "more_actions" not in script.seen[0].request.output_schema["properties"]
    assert "chain up to" not in script.seen[0].system


def test_chain_abort_rules():
    same = {"url_before": "http://a/x?b=1&a=2", "url_now": "http://a/x/?a=2&b=1", "navigations": 0}
    assert batch_abort_reason(**same, actionable_before=10, actionable_now=12) is None
    assert "from 10 to 13" in batch_abort_reason(**same, actionable_before=10, actionable_now=13)
    assert "from 10 to 7" in batch_abort_reason(**same, actionable_before=10, actionable_now=7)
    assert batch_abort_reason(**{**same, "navigations": 1}, actionable_before=1, actionable_now=1) == "the page navigated"
    assert "URL changed" in batch_abort_reason(**{**same, "url_now": "http://a/y"}, actionable_before=1, actionable_now=1)
    assert is_pagination_control("[0-9] link: Load more") and not is_pagination_control("[0-9] link: Next steps for you")
    assert item_count({"items": [1, 2], "pages": 3}) == 2 and item_count({"a": [1], "b": [2]}) is None


# --- fallback model: a real provider answering 429 ------------------------------------------------


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


def primary(fake: FakeProvider) -> LLMClient:
    return LLMClient("openai/gpt-4.1-mini", api_key="sk-test-key", base_url=f"{fake.url}/v1",
                     output_mode="json_schema", retry_policy=FAST)


def rate_limited(fake: FakeProvider, times: int) -> None:
    for _ in range(times):
        fake.reply(error_body("slow down", "rate_limit_error"), status=429, headers={"retry-after-ms": "1"})


async def test_fallback_model_takes_over_after_429s(page, server, fake, caplog):
    caplog.set_level(logging.WARNING, logger="stagehand_py")
    fake.reset()
    fake.reply(chat_completion(json.dumps(call("goto", url=server.url("site/index.html")))))
    rate_limited(fake, 3)  # the primary's first try and its two retries
    fallback = AgentScript([lambda s: call("done", message="done by the fallback")])
    events = []
    # The step's fallback alone: no verdict request (self_check) after the done, whose retries on
    # the exhausted primary would be counted here too.
    agent = Stagehand(page, model=primary(fake)).agent(fallback_model=fallback, self_check=False)
    result = await agent.execute("Open the site and finish", max_steps=5, callbacks=events.append)
    assert result.status == "done" and result.message == "done by the fallback"
    assert len(fake.seen) == 4 and len(fallback.seen) == 1
    assert [s.model_fallback for s in result.steps] == [False, True]
    (warning,) = [e.data for e in events if e.type == "warning"]
    assert warning["kind"] == "fallback_model" and warning["error"] == "RateLimitError"
    assert warning["primary"] == "openai/gpt-4.1-mini" and warning["fallback"] == "agent-script"
    assert "one attempt on the fallback model agent-script" in caplog.text


async def test_consolidation_prefers_the_fallback_when_the_primary_just_failed(page, server, fake):
    fake.reset()
    fake.reply(chat_completion(json.dumps(call("save_progress", data={"items": ["Anchor"]}))))
    rate_limited(fake, 3)
    asked: list[str] = []

    def fallback_answer(request: LLMRequest) -> dict:
        asked.append(request.purpose)
        if request.purpose == "agent":
            raise RateLimitError("fallback busy too", provider="test", model="fallback", status=429)
        return {"items": ["Anchor"], "complete": False}

    await page.goto(server.url("agent/list/1.html"))
    schema = {"type": "object", "properties": {"items": {"type": "array"}, "complete": {"type": "boolean"}},
              "required": ["items", "complete"]}
    agent = Stagehand(page, model=primary(fake)).agent(fallback_model=FunctionLLM(fallback_answer, model_name="fb"))
    result = await agent.execute("Collect parts", max_steps=2, output=schema)
    assert result.status == "partial_success"
    assert result.output == {"items": ["Anchor"], "complete": False}
    assert asked == ["agent", "agent_consolidate"] and len(fake.seen) == 4  # the primary was not asked again
    assert result.steps[-1].ok is False and "RateLimitError" in result.steps[-1].result


async def test_without_fallback_429s_are_a_failed_step(page, server, fake):
    fake.reset()
    rate_limited(fake, 3)
    fake.reply(chat_completion(json.dumps(call("fail", reason="gave up"))))
    await page.goto(server.url("site/index.html"))
    result = await Stagehand(page, model=primary(fake)).agent().execute("x", max_steps=3)
    assert result.status == "failed" and len(fake.seen) == 4
    assert "RateLimitError" in result.steps[0].result and not any(s.model_fallback for s in result.steps)


async def test_memory_notes_are_fenced_and_offered_to_the_first_steps_only(page, server):
    script = AgentScript([call("goto", url=server.url("agent/list/1.html")), save_page, next_page,
                          lambda s: call("done", message="ok")])
    agent = Stagehand(page, model=script).agent(memory_notes=["Parts: the Next page link is under Pagination"], memory_steps=2)
    await agent.execute("Collect parts", max_steps=6)
    offered = [s.fenced("run memory") for s in script.seen]
    assert offered[:2] == [["- Parts: the Next page link is under Pagination"]] * 2 and offered[2:] == [[], []]
