"""Evidence at an fsspec URL (fsspec's in-process memory filesystem) with the local engine: the
same files, results and combined.csv as on disk, and --resume reading them back."""

from __future__ import annotations

import csv
import io
import json

import fsspec

from stagehand_py.batch import EvidenceStore, RunMemory, Sample, TaskSpec, run_batch, write_reports

from ._scripted_runner import make_runner

SPEC = TaskSpec(goal="Record each product's name and price", required_fields=["name", "price"],
                required_screenshots=["product page"], max_time=60)


async def test_a_run_into_memory_url_and_its_resume(server, browser) -> None:
    fs = fsspec.filesystem("memory")
    url = "memory://batch-evidence-test/run_1"
    rows = [Sample(id=f"m{i}", url=server.url(f"products/{i}.html")) for i in (1, 2, 3)]
    result = await run_batch(rows, spec=SPEC, runner=make_runner(), browser=browser, run_dir=url, concurrency=2,
                             memory=RunMemory(url))
    write_reports(result.run_dir, result.results)
    assert result.run_dir == url and result.counts["done"] == 3
    assert sorted(fs.ls("/batch-evidence-test/run_1/m1", detail=False)) == [
        f"/batch-evidence-test/run_1/m1/{name}" for name in ("001_product_page.png", "action_log.json", "checkpoint.json", "result.json",
                                                       "run.html")
    ]
    stored = json.loads(fs.cat_file("/batch-evidence-test/run_1/m2/result.json"))
    assert stored["data"]["name"] == "Canvas Backpack" and stored["attempt"] == 1
    table = list(csv.DictReader(io.StringIO(fs.cat_file("/batch-evidence-test/run_1/combined.csv").decode())))
    assert [r["sample_id"] for r in table] == ["m1", "m2", "m3"]
    assert EvidenceStore("memory://batch-evidence-test").runs() == ["run_1"]

    # resume from the URL: m3 unfinished, the others are read back and skipped
    fs.rm("/batch-evidence-test/run_1/m3/checkpoint.json")
    resumed = await run_batch(rows, spec=SPEC, runner=make_runner(), browser=browser, run_dir=url, resume=True)
    assert sorted(resumed.skipped) == ["m1", "m2"] and resumed.results["m3"]["attempt"] == 1
    assert resumed.results["m1"] == json.loads(fs.cat_file("/batch-evidence-test/run_1/m1/result.json"))
    fs.rm("/batch-evidence-test", recursive=True)
