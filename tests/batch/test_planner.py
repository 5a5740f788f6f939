"""The task planner (issue 8): `stagehand-py run --prompt "..."` plans a task spec and samples
with one model call, saves them in the run folder, then runs exactly as with --task."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from stagehand_py import ConfigurationError
from stagehand_py.batch import RunnerFactory, TaskSpec, _cli, load_spec
from stagehand_py.batch._planner import _Plan, _to_task
from stagehand_py.llm import LLMClient, LLMRequest, TextPart
from stagehand_py.testing import FunctionLLM


def plan(**overrides) -> dict:
    answer = {
        "goal": "Record each product's name and price.",
        "system_prompt": "Read the heading and the price on the product page.",
        "output_fields": [{"name": "name", "type": "string", "description": "product name"},
                          {"name": "price", "type": "string", "description": "price with currency"}],
        "required_fields": ["name", "price"], "keywords": ["product", "price"], "max_steps": 5,
        "expected_items": None, "needs_discovery": False, "discovery_url": None, "link_pattern": None,
        "sample_urls": [],
    }
    return {**answer, **overrides}


def test_prompt_plans_the_task_and_runs_it(server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def planner(request: LLMRequest) -> dict:
        assert request.purpose == "batch_plan"
        text = "\n".join(p.text for m in request.messages for p in m.content if isinstance(p, TextPart))
        asked.append(text)
        return plan(sample_urls=re.findall(r"http://\S+?\.html", text))

    monkeypatch.setattr(_cli, "_model_client", lambda model: LLMClient(FunctionLLM(planner)))
    prompt = f"Go to {server.url('products/1.html')} and {server.url('products/2.html')} and record each product's name and price"
    code = _cli.main(["run", "--prompt", prompt, "--runner", "batch._scripted_runner:make_runner",
                      "--evidence-dir", str(tmp_path / "evidence"), "--no-progress", "--rate-limit", "0"])
    assert code == 0 and len(asked) == 1 and prompt in asked[0]
    (run_dir,) = (tmp_path / "evidence").glob("run_*")
    generated = load_spec(run_dir / "generated_task_spec.json")  # a plain task spec, usable with --task
    assert generated.goal == "Record each product's name and price." and generated.keywords == ["product", "price"]
    assert generated.output_schema["required"] == ["name", "price"]
    stored = json.loads((run_dir / "run.json").read_text())
    assert TaskSpec.model_validate(stored["spec"]) == generated  # the run used exactly that spec
    with (run_dir / "generated_samples.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [r["url"] for r in rows] == [server.url("products/1.html"), server.url("products/2.html")]
    assert [s["url"] for s in stored["samples"]] == [r["url"] for r in rows]
    results = {r["id"]: json.loads((run_dir / r["id"] / "result.json").read_text()) for r in rows}
    assert [r["data"]["name"] for r in results.values()] == ["Trail Runner Shoes", "Canvas Backpack"]
    assert all(r["status"] == "done" for r in results.values())


def test_planned_discovery_and_bad_plans() -> None:
    planned = _to_task(_Plan.model_validate(plan(needs_discovery=True, discovery_url="https://shop.example/list",
                                                  link_pattern=r"/item/\d+$")))
    assert planned.samples == [] and planned.spec.discovery.link_pattern == r"/item/\d+$"
    with pytest.raises(ConfigurationError, match="no discovery_url"):
        _to_task(_Plan.model_validate(plan(needs_discovery=True)))
    with pytest.raises(ConfigurationError, match="does not define: sku"):
        _to_task(_Plan.model_validate(plan(required_fields=["name", "sku"])))


def test_prompt_is_a_new_run_only(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="without --task and --resume"):
        _cli.main(["run", "--prompt", "x", "--task", str(tmp_path / "t.json"), "--evidence-dir", str(tmp_path)])


def test_long_horizon_flags_become_agent_options() -> None:
    parse = _cli.build_parser().parse_args
    args = parse(["run", "--task", "t.json", "--multi-action", "--pagination-bonus", "2", "--fallback-model", "openai/gpt-4.1-nano"])
    assert _cli._agent_options(args) == {"fallback_model": "openai/gpt-4.1-nano", "multi_action": True,
                                         "max_actions_per_step": 3, "pagination_bonus_steps": 2}
    assert _cli._agent_options(parse(["run", "--task", "t.json", "--multi-action", "5"]))["max_actions_per_step"] == 5
    assert _cli._agent_options(parse(["run", "--task", "t.json"])) == {}  # all off by default
    with pytest.raises(ConfigurationError, match="does not take fallback_model"):
        RunnerFactory("batch._scripted_runner:make_runner", options={"fallback_model": "x"}).build()
