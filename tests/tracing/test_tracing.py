"""Spans of observe / act / extract, the agent, each model call and each browser action, read
through the OpenTelemetry SDK's in-memory exporter on a real Chromium (a page we wrap and a page
we launch); only the model is scripted."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from stagehand_py import Stagehand
from stagehand_py.llm import LLMRequest
from stagehand_py.testing import FunctionLLM
from stagehand_py.tracing import MAX_TEXT_CHARS, TRACER_NAME, tracing_available
from stagehand_py.tracing._spans import traced_model_call, traced_operation

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))
from agent._script import AgentScript, call
from operations._ops import element, find_id, first_user, prompt_text

SECRET = "hunter2-Secret-Value"
VARIABLES = {"password": {"value": SECRET, "description": "the account password"}}


def by_name(finished: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in finished if s.name == name]


def one(finished: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    found = by_name(finished, name)
    assert len(found) == 1, f"{name}: {[s.name for s in finished]}"
    return found[0]


def child_of(span: ReadableSpan, parent: ReadableSpan) -> bool:
    return span.parent is not None and span.parent.span_id == parent.context.span_id


def attribute_text(finished: Sequence[ReadableSpan]) -> str:
    return json.dumps([{**dict(s.attributes or {}), "_status": s.status.description} for s in finished], default=str)


def fake_model(request: LLMRequest) -> Any:
    if request.purpose == "observe":
        password = find_id(first_user(request), "textbox: Password")
        offered = "%password%" in prompt_text(request)  # the variable's placeholder, when one was given
        return {"elements": [element(password, "fill", ["%password%"]) if offered else element(password, "click")]}
    if request.purpose == "extract":
        return {"data": {"heading": "Sign in"}, "instruction_satisfied": True}
    raise AssertionError(f"unexpected purpose {request.purpose}")


async def run_flow(sh: Stagehand, server: Any, *, declare: bool) -> None:
    await sh.page.goto(server.url("forms.html"))
    variables = VARIABLES if declare else None
    actions = await sh.observe(f"type {SECRET} into the password field", variables=variables)
    assert actions[0].arguments == (["%password%"] if declare else [])
    await sh.act(actions[0], variables=variables)
    data = await sh.extract("the heading", schema={"type": "object", "properties": {"heading": {"type": "string"}},
                                                 "required": ["heading"]})
    assert data == {"heading": "Sign in"}


def check_flow_spans(finished: Sequence[ReadableSpan]) -> None:
    observe, act, extract = one(finished, "stagehand.observe"), one(finished, "stagehand.act"), one(finished, "stagehand.extract")
    chats = by_name(finished, "chat fake-model")
    assert len(chats) == 2
    assert child_of(chats[0], observe) and child_of(chats[1], extract)
    action = one(finished, "stagehand.action fill")  # the typed value is an argument: never recorded
    assert child_of(action, act)
    assert all(s.instrumentation_scope is not None and s.instrumentation_scope.name == TRACER_NAME for s in finished)
    # GenAI semantic conventions on the model call.
    attrs = dict(chats[0].attributes or {})
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.request.model"] == "fake-model"
    assert attrs["gen_ai.usage.input_tokens"] > 0 and attrs["gen_ai.usage.output_tokens"] > 0
    assert attrs["stagehand.llm.purpose"] == "observe"
    # The verbs: what was asked (bounded), where, and what came back as counts.
    assert dict(observe.attributes or {})["stagehand.actions.count"] == 1
    assert dict(observe.attributes or {})["stagehand.page.url"].endswith("/forms.html")
    assert dict(act.attributes or {})["stagehand.act.success"] is True
    action_attrs = dict(action.attributes or {})
    assert action_attrs["stagehand.action.method"] == "fill"
    assert action_attrs["stagehand.action.selector"].startswith("xpath=/html[1]/body[1]")


@pytest.mark.parametrize("how", ["wrapped", "launched"])
async def test_spans_nest_and_carry_no_secret(how: str, spans: Any, page: Any, server: Any) -> None:
    model = FunctionLLM(fake_model, model_name="fake-model")
    sh = Stagehand(page, model=model) if how == "wrapped" else await Stagehand.launch(model=model)
    try:
        await run_flow(sh, server, declare=True)
    finally:
        await sh.close()
    finished = spans.get_finished_spans()
    check_flow_spans(finished)
    observe = one(finished, "stagehand.observe")
    assert dict(observe.attributes or {})["stagehand.instruction"] == "type %password% into the password field"
    assert SECRET not in attribute_text(finished)


async def test_control_an_undeclared_secret_is_seen_by_the_scan(spans: Any, page: Any, server: Any) -> None:
    # The same flow without declaring the variable on observe: the instruction then carries the
    # text as written, and the scan of the attributes finds it -- the scan above can fail.
    await run_flow(Stagehand(page, model=FunctionLLM(fake_model, model_name="fake-model")), server, declare=False)
    assert SECRET in attribute_text(spans.get_finished_spans())


async def test_agent_run_and_steps(spans: Any, page: Any, server: Any) -> None:
    script = AgentScript([
        lambda s: call("act", element_id=s.id("textbox", "Password"), method="fill", arguments=["%password%"]),
        lambda s: call("done", message="filled"),
    ])
    await page.goto(server.url("forms.html"))
    result = await Stagehand(page, model=script).agent().execute(f"log in with {SECRET}", variables=VARIABLES, max_steps=4)
    assert result.success, result.message
    finished = spans.get_finished_spans()
    run = one(finished, "invoke_agent stagehand")
    steps = by_name(finished, "stagehand.agent.step")
    assert [dict(s.attributes or {})["stagehand.agent.step"] for s in steps] == [1, 2]
    assert all(child_of(s, run) for s in steps)
    chats = by_name(finished, "chat agent-script")
    # Two steps' calls and the verdict on the final page (self_check), inside the second step.
    assert len(chats) == 3 and [any(child_of(c, s) for s in steps) for c in chats] == [True, True, True]
    act = one(finished, "stagehand.act")
    assert child_of(act, steps[0]) and child_of(one(finished, "stagehand.action fill"), act)
    run_attrs = dict(run.attributes or {})
    assert run_attrs["gen_ai.operation.name"] == "invoke_agent"
    assert run_attrs["stagehand.agent.steps"] == 2 and run_attrs["stagehand.agent.status"] == "done"
    assert run_attrs["stagehand.instruction"] == "log in with %password%"
    assert SECRET not in attribute_text(finished)


async def test_errors_are_typed_and_bounded(spans: Any, page: Any) -> None:
    await page.set_content("<p>nothing to click</p>")
    from stagehand_py import Action, ElementNotFoundError

    # The resolver waits for the element until just before the verb's timeout, then raises
    # ElementNotFoundError; 10 s leaves a loaded machine the same room to fail on its own (a 2 s
    # verb timeout raised StagehandTimeoutError first) without 20 more seconds of the same nothing.
    with pytest.raises(ElementNotFoundError):
        await Stagehand(page).act(Action(selector="xpath=/html[1]/body[1]/button[1]", method="click"), timeout=10)
    act = one(spans.get_finished_spans(), "stagehand.act")
    assert dict(act.attributes or {})["error.type"] == "ElementNotFoundError"
    assert not act.status.is_ok and len(act.status.description or "") <= MAX_TEXT_CHARS
    assert not act.events  # no exception event: a stack trace could quote page text


async def test_instructions_are_truncated(spans: Any) -> None:
    async def answer() -> str:
        return "ok"

    await traced_operation("observe", answer, instruction="x" * 5000, url="http://127.0.0.1/", variables=None)
    value = dict(one(spans.get_finished_spans(), "stagehand.observe").attributes or {})["stagehand.instruction"]
    assert len(value) == MAX_TEXT_CHARS


async def test_cost_is_recorded_when_usage_carries_it(spans: Any) -> None:
    from types import SimpleNamespace

    async def priced() -> Any:
        return SimpleNamespace(usage=SimpleNamespace(input_tokens=10, output_tokens=3, cost_usd=0.0042), model="m", finish_reason="stop")

    async def unpriced() -> Any:
        return SimpleNamespace(usage=SimpleNamespace(input_tokens=10, output_tokens=3), model="m", finish_reason="stop")

    request = SimpleNamespace(purpose="extract", attempt=1, max_output_tokens=None, temperature=None)
    await traced_model_call(priced, model="openai/gpt-4.1-mini", request=request)
    await traced_model_call(unpriced, model="openai/gpt-4.1-mini", request=request)
    first, second = (dict(s.attributes or {}) for s in spans.get_finished_spans())
    assert first["stagehand.usage.cost_usd"] == pytest.approx(0.0042)
    assert first["gen_ai.provider.name"] == "openai" and first["gen_ai.request.model"] == "gpt-4.1-mini"
    assert first["gen_ai.response.finish_reasons"] == ("stop",)
    assert "stagehand.usage.cost_usd" not in second


async def test_without_the_api_it_is_a_no_op(spans: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    async def answer() -> str:
        return "ok"

    await traced_operation("extract", answer, instruction="control", url="about:blank", variables=None)
    assert len(spans.get_finished_spans()) == 1 and tracing_available()  # control: with the API, a span is made
    spans.clear()
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # as if the extra were not installed
    assert await traced_operation("extract", answer, instruction="x", url="about:blank", variables=None) == "ok"
    assert spans.get_finished_spans() == ()


def test_importing_the_package_imports_no_opentelemetry() -> None:
    code = "import sys, stagehand_py, stagehand_py.tracing; print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


async def test_a_failed_action_leaks_no_typed_value(spans: Any, page: Any) -> None:
    # Playwright's own error for a failed fill quotes the value it was typing; the action span
    # keeps only the error's type.
    await page.set_content("<button>not a text box</button>")
    from stagehand_py import Action, ActionFailedError

    with pytest.raises(ActionFailedError):
        await Stagehand(page).act(Action(selector="xpath=/html[1]/body[1]/button[1]", method="fill",
                                         arguments=["%password%"]), variables=VARIABLES, timeout=15)
    finished = spans.get_finished_spans()
    action = one(finished, "stagehand.action fill")
    assert dict(action.attributes or {})["error.type"] == "Error" and not action.status.is_ok
    assert SECRET not in attribute_text(finished)
