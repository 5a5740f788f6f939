"""Run-scoped memory (issue 8): patterns distilled from done samples, failure notes from failed
ones, stored in the run folder only, offered to later samples, reloaded and extended on resume."""

from __future__ import annotations

import json
import re
from pathlib import Path

from stagehand_py.batch import RunMemory, Sample, TaskSpec, run_batch
from stagehand_py.batch._agent_runner import make_agent_runner
from stagehand_py.llm import LLMClient, LLMRequest, TextPart
from stagehand_py.testing import FunctionLLM

SPEC = TaskSpec(goal="Record the product's name and price.", keywords=["product", "price"], max_steps=4, max_time=60)
_NOTES = re.compile(r"<<<BEGIN UNTRUSTED (\w+) \(run memory\)\n(.*?)\nEND UNTRUSTED \1>>>", re.DOTALL)


class Model:
    """The agent (reads the page and finishes, or fails on an error page) and the cheap memory model."""

    def __init__(self) -> None:
        self.notes_seen: dict[str, list[str]] = {}  # start URL -> notes offered at its first step
        self.distilled: list[str] = []

    def __call__(self, request: LLMRequest) -> dict:
        text = "\n".join(p.text for m in request.messages for p in m.content if isinstance(p, TextPart))
        if request.purpose == "batch_memory":
            assert "Action log:" in text and "done" in text
            pattern = f"The product name is the page heading and the price follows it (lesson {len(self.distilled) + 1})"
            self.distilled.append(pattern)
            return {"patterns": [pattern]}
        assert request.purpose == "agent", request.purpose
        start = re.search(r"This sample starts at (\S+) \(already open\)", text).group(1)
        if "Step 1 of" in text:
            found = _NOTES.search(text)
            self.notes_seen[start] = found.group(2).splitlines() if found else []
        if "not found: " in text:
            return step("fail", reason="the page is missing")
        name = re.findall(r"heading: (.+)", text)[-1].strip()
        price = re.findall(r"StaticText: (\$[\d.]+)", text)[-1]
        return step("done", message="recorded", output={"name": name, "price": price})


def step(tool: str, **args) -> dict:
    return {"evaluation_previous_step": "ok", "memory": "", "next_goal": tool, "action": {"tool": tool, "args": args}}


async def test_memory_learns_offers_and_is_reloaded_on_resume(server, browser, tmp_path: Path) -> None:
    model = Model()
    runner = make_agent_runner(model=FunctionLLM(model))
    client = LLMClient(FunctionLLM(model))
    run_dir = tmp_path / "run_1"
    p1, dead, p2 = (Sample(id="p1", url=server.url("products/1.html")), Sample(id="dead", url=server.url("products/missing.html")),
                    Sample(id="p2", url=server.url("products/2.html")))

    # First (interrupted) run: p1 then the dead page, one at a time.
    first = await run_batch([p1, dead], spec=SPEC, runner=runner, browser=browser, run_dir=run_dir, concurrency=1,
                            memory=RunMemory(run_dir, client=client))
    assert {k: v["status"] for k, v in first.results.items()} == {"p1": "done", "dead": "failed"}
    assert model.notes_seen[p1.url] == []  # nothing learned yet
    assert model.notes_seen[dead.url] == [f"- Pattern: {model.distilled[0]}"]  # offered, fenced, at step 1
    stored = json.loads((run_dir / "memory.json").read_text())
    assert [(n["kind"], n["sample_id"]) for n in stored["notes"]] == [("pattern", "p1"), ("failure", "dead")]
    assert stored["notes"][1]["text"] == f"Dead URL: {dead.url} answered HTTP 404."
    assert json.loads((run_dir / "run.json").read_text())["memory"] is True

    # --resume: a new RunMemory reloads the file; p2 gets both notes and adds its own pattern.
    second = await run_batch([p1, dead, p2], spec=SPEC, runner=runner, browser=browser, run_dir=run_dir,
                             concurrency=1, resume=True, memory=RunMemory(run_dir, client=client))
    assert second.skipped == ["p1", "dead"] and second.results["p2"]["status"] == "done"
    # Ranked by overlap with the sample's goal and URL: the pitfall shares the host and path words too.
    assert model.notes_seen[p2.url] == [f"- Pitfall: Dead URL: {dead.url} answered HTTP 404.", f"- Pattern: {model.distilled[0]}"]
    stored = json.loads((run_dir / "memory.json").read_text())
    assert [(n["kind"], n["sample_id"]) for n in stored["notes"]] == [("pattern", "p1"), ("failure", "dead"), ("pattern", "p2")]
    assert stored["notes"][2]["text"] == model.distilled[1]

    # Another run folder starts empty: no leakage between runs.
    other = tmp_path / "run_2"
    await run_batch([p2], spec=SPEC, runner=runner, browser=browser, run_dir=other, memory=RunMemory(other, client=client))
    assert model.notes_seen[p2.url] == []


def test_ranking_by_overlap_with_the_goal(tmp_path: Path) -> None:
    (tmp_path / "memory.json").write_text(json.dumps({"version": 1, "notes": [
        {"kind": "pattern", "text": "Opening hours are in the footer", "sample_id": "a"},
        {"kind": "pattern", "text": "The price sits under the product heading", "sample_id": "b"},
        {"kind": "failure", "text": "Dead URL: /products/9 answered HTTP 404 (product gone)", "sample_id": "c"},
    ]}))
    memory = RunMemory(tmp_path)
    notes = memory.relevant(TaskSpec(goal="Record the product price"), Sample(id="x", url="http://shop/item/1"))
    assert notes == ["Pattern: The price sits under the product heading", "Pitfall: Dead URL: /products/9 answered HTTP 404 (product gone)"]
