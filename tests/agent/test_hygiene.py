"""The agent's hygiene pieces, without a browser or a model."""

from __future__ import annotations

import json
import os
import threading

import pytest
from pydantic import BaseModel

from stagehand_py import (
    ActionFailedError,
    CDPError,
    ElementNotFoundError,
    PageClosedError,
    ProviderConnectionError,
)
from stagehand_py._util import deep_merge, normalise_url, write_json_atomic
from stagehand_py.agent.hygiene import (
    FailureTracker,
    StallDetector,
    StepBudget,
    action_signature,
    check_done_output,
    classify_error,
    history_split,
    page_signature,
    sanitise,
    summarise_steps,
)

# --- budget ----------------------------------------------------------------------------------


def test_budget_warns_once_at_75_and_90_percent():
    budget = StepBudget(max_steps=20)
    fired = {step: budget.warnings(step) for step in range(1, 21)}
    assert {s: w for s, w in fired.items() if w} == {15: [0.75], 18: [0.9]}
    assert not budget.is_last(19) and budget.is_last(20)
    assert budget.remaining(15) == 5


def test_budget_warning_not_lost_when_a_threshold_is_skipped():
    budget = StepBudget(max_steps=10)
    assert budget.warnings(9) == [0.75, 0.9]  # jumped past both: both said, once
    assert budget.warnings(9) == []


def test_budget_deadline():
    assert not StepBudget(max_steps=3).out_of_time(1e12)
    budget = StepBudget(max_steps=3, deadline=100.0)
    assert not budget.out_of_time(99.9) and budget.out_of_time(100.0)


# --- stall -----------------------------------------------------------------------------------


def test_url_normalisation_and_signatures():
    assert normalise_url("HTTP://Example.COM:80/a/?b=2&a=1&utm_source=x#frag") == "http://example.com/a?a=1&b=2"
    assert normalise_url("http://127.0.0.1:8000/") == "http://127.0.0.1:8000/"
    assert page_signature("http://x.test/a#1", "outline") == page_signature("http://x.test/a#2", "outline")
    assert page_signature("http://x.test/a", "outline") != page_signature("http://x.test/a", "outline 2")
    assert action_signature("act", {"b": 1, "a": 2}) == action_signature("act", {"a": 2, "b": 1})


def test_stall_nudges_escalate_at_3_5_8_then_force_finish():
    stall = StallDetector()
    states = [stall.record(before="same", after="same", action=f"think:{i}") for i in range(1, 10)]
    assert [s.stalled_steps for s in states] == list(range(1, 10))
    assert {i + 1: s.nudge for i, s in enumerate(states) if s.nudge} == {3: 1, 5: 2, 8: 3}
    assert [s.force_finish for s in states].index(True) == 7  # from the 8th stalled step on


def test_stall_reset_by_progress_and_repeated_actions_count():
    stall = StallDetector()
    for _ in range(2):
        stall.record(before="a", after="a", action="scroll")
    assert stall.record(before="a", after="b", action="click next").stalled_steps == 0
    # The page changes every time, but the same action is repeated: still a stall.
    states = [stall.record(before=f"p{i}", after=f"p{i + 1}", action="click load-more") for i in range(4)]
    assert [s.stalled_steps for s in states] == [0, 1, 2, 3] and states[-1].nudge == 1
    # Progress re-arms the nudges.
    stall.record(before="x", after="y", action="goto")
    again = [stall.record(before="y", after="y", action=f"think {i}") for i in range(3)]
    assert again[-1].nudge == 1


def test_stall_levels_validated():
    with pytest.raises(ValueError):
        StallDetector(levels=(5, 3))


# --- failures ----------------------------------------------------------------------------------


def test_errors_classified_infrastructure_or_logic():
    assert classify_error(PageClosedError("page closed")) == "infrastructure"
    assert classify_error(CDPError("boom", method="DOM.getDocument")) == "infrastructure"
    assert classify_error(ProviderConnectionError("down", provider="openai", model="m")) == "infrastructure"
    assert classify_error(RuntimeError("Page.goto: net::ERR_CONNECTION_REFUSED at http://127.0.0.1:1/")) == "infrastructure"
    assert classify_error(RuntimeError("net::ERR_NAME_NOT_RESOLVED")) == "infrastructure"
    assert classify_error(RuntimeError("Target crashed")) == "infrastructure"
    assert classify_error(ElementNotFoundError("no element for xpath=/html[1]/x")) == "logic"
    assert classify_error(ActionFailedError("element is disabled")) == "logic"
    assert classify_error(RuntimeError("net::ERR_BLOCKED_BY_CLIENT")) == "logic"  # our own domain block
    # The cause chain is followed.
    try:
        try:
            raise OSError("connect ECONNREFUSED 127.0.0.1:9")
        except OSError as inner:
            raise ActionFailedError("click failed") from inner
    except ActionFailedError as outer:
        assert classify_error(outer) == "infrastructure"


def test_failure_tracker_shows_elements_after_3_and_breaker_trips_on_consecutive_infra():
    tracker = FailureTracker()
    assert not tracker.failure("logic").show_elements
    assert not tracker.failure("logic").show_elements
    assert tracker.failure("logic").show_elements
    assert tracker.success().consecutive == 0
    tracker.failure("infrastructure")
    tracker.failure("infrastructure")
    tracker.failure("logic")  # a logic failure in between: the infra streak restarts
    assert not tracker.failure("infrastructure").tripped
    tracker.failure("infrastructure")
    state = tracker.failure("infrastructure")
    assert state.tripped and state.consecutive_infrastructure == 3


# --- data ------------------------------------------------------------------------------------


def test_deep_merge_arrays_append_objects_recurse_scalars_replace():
    base = {"items": [{"n": 1}], "meta": {"pages": 1, "src": {"a": 1}}, "title": "x"}
    update = {"items": [{"n": 2}], "meta": {"pages": 2, "src": {"b": 2}}, "title": "y", "new": [1]}
    merged = deep_merge(base, update)
    assert merged == {
        "items": [{"n": 1}, {"n": 2}],
        "meta": {"pages": 2, "src": {"a": 1, "b": 2}},
        "title": "y",
        "new": [1],
    }
    assert base["items"] == [{"n": 1}] and base["meta"]["src"] == {"a": 1}  # inputs untouched
    merged["new"].append(2)
    assert update["new"] == [1]  # no shared lists
    assert deep_merge({"a": [1]}, {"a": {"b": 1}}) == {"a": {"b": 1}}  # type mismatch: replaced
    assert deep_merge(None, {"a": 1}) == {"a": 1}


def test_checkpoint_write_is_atomic(tmp_path, monkeypatch):
    target = tmp_path / "run" / "checkpoint.json"
    write_json_atomic(target, {"v": 1})
    assert json.loads(target.read_text()) == {"v": 1}

    # A crash in the middle of writing leaves the old file intact and no temp file behind.
    real_fsync = os.fsync

    def crash(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(OSError):
        write_json_atomic(target, {"v": 2})
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert json.loads(target.read_text()) == {"v": 1}
    assert [p.name for p in target.parent.iterdir()] == ["checkpoint.json"]

    # Concurrent readers never see a partial file.
    stop = threading.Event()
    bad: list[str] = []

    def reader():
        while not stop.is_set():
            try:
                json.loads(target.read_text())
            except json.JSONDecodeError as exc:
                bad.append(str(exc))

    t = threading.Thread(target=reader)
    t.start()
    for i in range(40):
        write_json_atomic(target, {"v": i, "pad": "x" * 50000})
    stop.set()
    t.join()
    assert bad == []


class Out(BaseModel):
    name: str
    count: int


def test_done_output_checked_against_pydantic_and_json_schema():
    value, problems = check_done_output({"name": "a", "count": 2}, Out)
    assert problems == [] and value == Out(name="a", count=2)
    _, problems = check_done_output({"name": "a"}, Out)
    assert problems == ["$.count: Field required"]
    _, problems = check_done_output(None, Out)
    assert problems and "missing" in problems[0]
    schema = {"type": "object", "properties": {"items": {"type": "array"}}, "required": ["items"]}
    assert check_done_output({"items": []}, schema) == ({"items": []}, [])
    _, problems = check_done_output({"items": "no"}, schema)
    assert problems == ["$.items: 'no' is not of type 'array'"]
    assert check_done_output(None, None) == (None, [])


# --- history ---------------------------------------------------------------------------------


def test_history_split_moves_in_jumps_and_keeps_recent_steps():
    splits = [history_split(n, keep_last=4, summarise_every=3) for n in range(14)]
    assert splits == [0, 0, 0, 0, 0, 0, 0, 3, 3, 3, 6, 6, 6, 9]
    assert all(n - s >= min(n, 4) for n, s in zip(range(14), splits))


def test_summaries_are_one_line_per_step_and_bounded():
    steps = [
        {"step": 1, "tool": "goto", "args": {"url": "http://x.test/"}, "ok": True, "result": "loaded"},
        {"step": 2, "tool": "act", "args": {"instruction": "y" * 300}, "ok": False, "result": "not found"},
    ]
    text = summarise_steps(steps)
    lines = text.splitlines()
    assert lines[0] == 'step 1: goto {"url": "http://x.test/"} -> ok: loaded'
    assert lines[1].startswith("step 2: act ") and "FAILED" in lines[1] and len(lines[1]) <= 160


def test_sanitise_drops_binaries_and_long_base64():
    import base64

    png = b"\x89PNG" + bytes(5000)
    out = sanitise({"shot": png, "b64": base64.b64encode(png).decode(), "text": "ok", "n": [1, (2, 3)]})
    assert out["shot"].startswith("<5004 bytes sha256:")
    assert out["b64"].startswith("<base64 ")
    assert out["text"] == "ok" and out["n"] == [1, [2, 3]]
    long = sanitise("word " * 1000, max_str=100)
    assert len(long) < 140 and long.endswith("more chars]")
