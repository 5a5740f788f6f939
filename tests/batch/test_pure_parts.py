"""Batch runner parts without a browser: names, evidence files, the status rules, specs, CSV."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest

from stagehand_py import ConfigurationError
from stagehand_py.batch import (
    DomainRateLimiter,
    EvidenceStore,
    SampleEvidence,
    SampleOutcome,
    TaskSpec,
    judge,
    load_spec,
    safe_component,
    samples_from_csv,
)
from stagehand_py.batch._report import write_combined_csv, write_report_html


@pytest.mark.parametrize(("raw", "safe"), [
    ("../../etc/passwd", "etc_passwd"), ("..", "item"), ("", "item"), (".hidden", "hidden"),
    ("a/b\\c", "a_b_c"), ("CON", "item_CON"), ("-rf", "rf"), ("Ünïcode name?.png", "n_code_name_.png"),
    ("x" * 300, "x" * 100),
])
def test_safe_component(raw: str, safe: str) -> None:
    assert safe_component(raw) == safe


def test_screenshots_are_numbered_hashed_and_stay_inside(tmp_path: Path) -> None:
    evidence = SampleEvidence("../s1")
    first = evidence.add_screenshot(b"one", name="../../../outside")
    second = evidence.add_screenshot(b"two", name="Product page", step=3)
    assert [first["file"], second["file"]] == ["001_outside.png", "002_Product_page.png"]
    assert second == {"file": "002_Product_page.png", "name": "Product page", "sha256": hashlib.sha256(b"two").hexdigest(), "bytes": 3, "step": 3}
    # result.json is the run's own file for the row: a runner's file of that name gets a name of its own.
    assert evidence.add_json("../result.json", {"a": 1}) == "result_2.json"
    assert not list(tmp_path.iterdir())  # nothing is written while the sample runs
    evidence.write_to(EvidenceStore(tmp_path))
    assert sorted(p.name for p in (tmp_path / "s1").iterdir()) == ["001_outside.png", "002_Product_page.png", "result_2.json"]
    assert (tmp_path / "s1" / "002_Product_page.png").read_bytes() == b"two"
    assert json.loads((tmp_path / "s1" / "result_2.json").read_text()) == {"a": 1}


def test_evidence_store_on_a_folder_and_on_fsspec_memory(tmp_path: Path) -> None:
    local, remote = EvidenceStore(tmp_path / "run_1"), EvidenceStore("memory://evidence-test/run_1")
    for store in (local, remote):
        store.write_json("s1/result.json", {"a": 1})
        assert store.read_json("s1/result.json") == {"a": 1} and store.read_json("missing.json") is None
        with pytest.raises(ValueError, match="outside|plain relative"):
            store.write_bytes("../escape.txt", b"x")
    assert not (tmp_path / "escape.txt").exists() and not list((tmp_path / "run_1").rglob("*.tmp"))
    assert str(remote.path_of("s1/result.json")) == "memory://evidence-test/run_1/s1/result.json"
    with pytest.raises(ConfigurationError, match="cannot open the evidence location 'nosuchproto://x'"):
        EvidenceStore("nosuchproto://x")


def test_status_rules() -> None:
    spec = TaskSpec(goal="g", required_fields=["name", "price"], required_screenshots=["page"], expected_items=3)
    shot = [{"name": "page"}]
    assert judge(spec, SampleOutcome("done", {"name": "a", "price": "1"}), shot) == ("done", [])
    assert judge(spec, SampleOutcome("done", {"name": "a", "price": ""}), shot) == ("partial_success", ["required fields missing or empty: price"])
    assert judge(spec, SampleOutcome("done", {"name": "a", "price": "1"}), []) == ("needs_review", ["required screenshots missing: page"])
    items = [{"name": "a", "price": "1"}, {"name": "b"}]
    assert judge(spec, SampleOutcome("done", items), shot) == ("partial_success", ["required fields missing or empty: price", "2 items, 3 expected"])
    assert judge(spec, SampleOutcome("failed", None, error="x"), []) == ("failed", [])


async def test_rate_limiter_spaces_starts_per_host() -> None:
    limiter = DomainRateLimiter(0.1)
    loop = asyncio.get_running_loop()
    times: dict[str, list[float]] = {"a": [], "b": []}

    async def start(host: str) -> None:
        await limiter.wait(f"http://{host}.test/x")
        times[host].append(loop.time())

    await asyncio.gather(*(start(h) for h in "aaabb"))
    assert all(y - x >= 0.095 for t in times.values() for x, y in zip(t, t[1:]))
    assert abs(times["a"][0] - times["b"][0]) < 0.05  # hosts do not wait for each other


def test_spec_and_csv_errors(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text(json.dumps({"goal": "g", "max_steps": 0, "unknown": 1}))
    with pytest.raises(ConfigurationError, match="max_steps") as info:
        load_spec(tmp_path / "bad.json")
    assert "unknown" in str(info.value)
    (tmp_path / "s.csv").write_text("id,url,extra\n../a,http://x.test/1,e1\n../a,http://x.test/2,e2\n,http://x.test/p?q=1,\n")
    samples = samples_from_csv(tmp_path / "s.csv")
    assert [s.id for s in samples] == ["a", "a_2", "x.test_p_q_1"]
    assert samples[0].data == {"extra": "e1"}
    (tmp_path / "nourl.csv").write_text("id,link\n1,http://x\n")
    with pytest.raises(ConfigurationError, match="needs a 'url' column"):
        samples_from_csv(tmp_path / "nourl.csv")


def test_combined_csv_sorted_and_json_encoded(tmp_path: Path) -> None:
    results = {
        "b": {"sample_id": "b", "url": "u", "status": "done", "data": {"n": 1, "tags": ["x", "y"], "obj": {"k": None}},
              "usage": {"cost_usd": 0.0123}},
        "a": {"sample_id": "a", "url": "u", "status": "failed", "data": None, "error": "boom", "notes": ["n1", "n2"]},
        "c": {"sample_id": "c", "url": "u", "status": "done", "data": [1, 2]},
    }
    text = write_combined_csv(tmp_path, results).read_text()
    assert text.splitlines() == [
        "sample_id,url,status,error,notes,screenshots,cost_usd,data.n,data.tags,data.obj,data",
        "a,u,failed,boom,n1; n2,[],,,,,",
        'b,u,done,,,[],0.0123,1,"[""x"", ""y""]","{""k"": null}",',
        "c,u,done,,,[],,,,,\"[1, 2]\"",
    ]
    # The report sums the known costs and says how many rows had none (a model without a price).
    report = write_report_html(tmp_path, results).read_text()
    assert "model cost: <b>$0.0123 (+2 rows of unknown cost)</b>" in report


def test_kept_files_never_share_a_name_and_keep_their_extension(tmp_path: Path) -> None:
    evidence = SampleEvidence("row")
    names = [evidence.add_file(name, name.encode(), folder="downloads")
             for name in ("report 1.txt", "report_1.txt", "report?1.txt", "x" * 300 + ".tar.gz", "x" * 300 + ".tar.gz")]
    assert names[:3] == ["downloads/report_1.txt", "downloads/report_1_2.txt", "downloads/report_1_3.txt"]
    assert names[3] == "downloads/" + "x" * 117 + ".gz" and names[4] == "downloads/" + "x" * 117 + "_2.gz"
    # A screenshot never takes the name of a file kept before it.
    evidence.add_file("001_page.png", b"not a screenshot")
    assert evidence.add_screenshot(b"shot", name="page")["file"] == "001_page_2.png"
    evidence.write_to(EvidenceStore(tmp_path))
    assert (tmp_path / "row" / "001_page.png").read_bytes() == b"not a screenshot"
    assert (tmp_path / "row" / "001_page_2.png").read_bytes() == b"shot"
    for name, original in zip(names, ("report 1.txt", "report_1.txt", "report?1.txt", "x" * 300 + ".tar.gz", "x" * 300 + ".tar.gz"), strict=True):
        assert (tmp_path / "row" / name).read_bytes() == original.encode()
