"""The worked pytest example's cassette asks what the prompts ask today (no browser, no model).

examples/pytest_flow/ replays a cassette recorded with the embedded model, matched on each request's
exact messages and schema (tests/plugin/test_worked_example.py replays it in a subprocess, about a
minute). A change to a prompt or an answer schema makes that replay fail, but only in a test that
prompt changes do not run. Here each recorded request is rebuilt from its own page text with
today's prompt code (the same functions the verbs call), so the next such change fails in
tests/operations, at once, with the command that records the cassette again.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from stagehand_py._operations._choice import as_choice
from stagehand_py._operations._extract_choice import choice_wire, plan_of
from stagehand_py._prompts.act import ActAnswer, act_system, act_user
from stagehand_py._prompts.common import FENCE_NONCE, Fence, with_states
from stagehand_py._prompts.extract import extract_system, extract_user
from stagehand_py._prompts.observe import ObserveAnswer, observe_system, observe_user
from stagehand_py._util import schema_dict

ROOT = Path(__file__).resolve().parent.parent.parent
FLOW = ROOT / "examples" / "pytest_flow"
CASSETTE = FLOW / "cassettes" / "test_shop_flow" / "test_sign_in_then_read_the_catalogue.json"
RECORD = ("the worked example's cassette no longer matches the prompts: record it again with the embedded model, "
          "`flock /work/model.lock .venv/bin/python -m pytest -q -p no:cacheprovider examples/pytest_flow "
          "--stagehand-record all` (then tests/plugin/test_worked_example.py replays it)")
_FENCE = Fence("abcdefghijklmn")
_INSTRUCTION = re.compile(r"\n\nInstruction: (.*?)(?:\n\n|$)", re.DOTALL)
_VARIABLE = re.compile(r"^- %(\w+)%(?:: (.*))?$", re.MULTILINE)


def _ids(text: str) -> str:
    """The cassette's ``<idN>`` as the snapshot's ``0-N`` (and back, with :func:`_stored`)."""
    return re.sub(r"<id(\d+)>", r"0-\1", text)


def _stored(data: Any) -> Any:
    """``data`` as the cassette stores it: the fence's nonce and the element ids replaced."""
    return json.loads(re.sub(r"\b0-(\d+)\b", r"<id\1>", FENCE_NONCE.sub("NONCE", json.dumps(data))))


def _fenced(user: str, label: str) -> str:
    """The text the request fenced as ``label`` ("" when it has none: the rebuilt request then differs)."""
    return user.partition(f"NONCE ({label})\n")[2].split("\nEND UNTRUSTED NONCE>>>", 1)[0]


def _example() -> Any:
    spec = importlib.util.spec_from_file_location("_worked_example_flow", FLOW / "test_shop_flow.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its pydantic models resolve their annotations there
    spec.loader.exec_module(module)
    return module


def _interactions() -> list[dict[str, Any]]:
    return [i["request"]["model_request"] for i in json.loads(CASSETTE.read_text(encoding="utf-8"))["interactions"]]


def _budget() -> int:
    """The token budget the cassette was recorded with (it bounds the choices offered)."""
    return int(json.loads(CASSETTE.read_text(encoding="utf-8"))["recorded_with"]["token_budget"])


def _texts(recorded: dict[str, Any]) -> tuple[str, str]:
    """The request's system and user text."""
    [system], [user] = ([m["content"][0]["text"] for m in recorded["messages"] if m["role"] == role]
                        for role in ("system", "user"))
    return system, user


def _rebuilt(recorded: dict[str, Any]) -> dict[str, Any]:
    """``recorded`` (one model request) as today's prompt code writes it for the same page text."""
    purpose = recorded["purpose"]
    user = _texts(recorded)[1]
    instruction = _INSTRUCTION.search(user).group(1)
    if purpose == "extract":
        lines = _fenced(user, "page lines")
        plan = plan_of(schema_dict(_example().Catalogue))  # the example's own schema
        assert plan is not None
        offered = {name.removesuffix("_line"): dict.fromkeys(node["enum"])
                   for name, node in recorded["schema"].get("$defs", {}).items() if name.endswith("_line")}
        return {"purpose": purpose, "system": extract_system(_FENCE),
                "user": extract_user(instruction, lines, _FENCE, choice=True),
                "schema": choice_wire(plan, offered)}
    outline = _ids(_fenced(user, "page outline"))
    variables = {name: about or "" for name, about in _VARIABLE.findall(user)}
    verb_user, answer, system_of = ((observe_user, ObserveAnswer, observe_system) if purpose == "observe"
                                    else (act_user, ActAnswer, act_system))
    # As ask_part composes it: the verb's words, the states block (listed apart from the outline), the choices.
    states = [line for line in _ids(_fenced(user, "current values and states")).split("\n") if line]
    composed = with_states(verb_user(instruction, outline, _FENCE, variables=variables), states, _FENCE)
    asked = as_choice(system_of(_FENCE), composed, answer,
                      outline=outline, fence=_FENCE, token_budget=_budget(), check=lambda out: ([], out),
                      instruction=instruction)
    assert asked is not None
    return {"purpose": purpose, "system": system_of(_FENCE), "user": asked.user, "schema": asked.output}


@pytest.mark.parametrize("n", range(len(_interactions())))
def test_the_worked_example_was_recorded_with_todays_prompts(n: int) -> None:
    recorded = _interactions()[n]
    system, user = _texts(recorded)
    want = {"purpose": recorded["purpose"], "system": system, "user": user, "schema": recorded["schema"]}
    assert _stored(_rebuilt(recorded)) == want, RECORD
