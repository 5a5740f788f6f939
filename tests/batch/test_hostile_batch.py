"""The issue's whole case at once, through the real command line: twenty rows with a task that
raises CancelledError, one that cancels its own task, a 2 MB cell, a short and a long row, two
download names that reduce to one, and a 300-character download name (tests/batch/_hostile_rows.py).
Real Chromium, real downloads from the 127.0.0.1 server; only the model is scripted.

Every row ends with one recorded outcome, the batch finishes (exit 0, combined.csv and the
report written), and every file kept has the SHA-256 recorded for it.
"""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pytest

from ._hostile_rows import FILES, LONG_NAME, hostile_routes, run_cli, write_inputs

RUN_FILES = {"result.json", "action_log.json", "checkpoint.json"}


@pytest.fixture
def hostile_site(server):
    with hostile_routes(server):
        yield server


@pytest.mark.parametrize("engine", [
    pytest.param([], id="local"),
    # The Ray engine starts a one-node cluster of its own (tens of seconds on two loaded cores).
    pytest.param(["--engine", "ray", "--workers", "2"], id="ray"),
])
def test_twenty_hostile_rows_end_in_twenty_recorded_outcomes(hostile_site, tmp_path: Path, engine: list[str]) -> None:
    write_inputs(tmp_path, hostile_site)
    done = run_cli(tmp_path, *engine)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "done 15  unverified 0  partial_success 0  failed 5  needs_review 0" in done.stdout, done.stdout
    (run_dir,) = (tmp_path / "evidence").glob("run_*")

    with (run_dir / "combined.csv").open(newline="") as handle:
        rows = {r["sample_id"]: r for r in csv.DictReader(handle)}
    ids = [f"p{i:02d}" for i in range(1, 14)] + ["c14", "c15", "big16", "short17", "d18", "d19", "long20"]
    assert sorted(rows) == sorted(ids) and len(rows) == 20
    failed = {sid: rows[sid]["error"] for sid in rows if rows[sid]["status"] == "failed"}
    assert sorted(failed) == ["big16", "c14", "c15", "long20", "short17"]
    assert failed["c14"] == "CancelledError: the task gave up"
    assert failed["c15"] == "CancelledError (raised by the sample's work)"
    # Input errors name the line (the BOM, blank lines and a line of empty cells counted right).
    assert failed["big16"] == ("rows.csv line 19: the cell 'note' (2,000,000 characters) is over the largest cell size "
                               "of 1,000,000 characters: shorten it, or raise the bound (--max-cell-size / max_cell_chars=)")
    assert failed["short17"].startswith("rows.csv line 20: 2 cells where the header has 4")
    assert failed["long20"].startswith("rows.csv line 24: 5 cells where the header has 4")
    assert rows["p02"]["data.heading"] == "Steel Water Bottle" and rows["d18"]["data.heading"] == "Two reports"
    assert (run_dir / "report.html").exists() and "failed: <b>5</b>" in (run_dir / "report.html").read_text()

    # Every file kept for every row is listed with the SHA-256 of its bytes, and nothing else is there.
    for sid in ids:
        folder = run_dir / sid
        result = json.loads((folder / "result.json").read_text())
        assert json.loads((folder / "checkpoint.json").read_text())["state"] == "complete"
        kept = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} - RUN_FILES
        assert kept == set(result["hashes"]), sid
        for name, digest in result["hashes"].items():
            assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, (sid, name)
    assert not list(run_dir.rglob("*.tmp"))

    # The downloads: each under a name of its own in the row's downloads/ folder, its bytes the served ones.
    served = {name: data for _, name, data in FILES}
    for sid, names in (("d18", ["report 1.txt", "report_1.txt"]), ("d19", [LONG_NAME])):
        result = json.loads((run_dir / sid / "result.json").read_text())
        downloads = result["extra"]["downloads"]
        assert [d["suggested_filename"] for d in downloads] == names
        assert len({d["file"] for d in downloads}) == len(names)
        for record in downloads:
            data = (run_dir / sid / record["file"]).read_bytes()
            assert data == served[record["suggested_filename"]]
            assert record["sha256"] == hashlib.sha256(data).hexdigest() == result["hashes"][record["file"]]
            assert record["size"] == len(data) and record["file"].startswith("downloads/")
        assert "download_failures" not in result["extra"] and result["notes"] == []
    files = [d["file"] for d in json.loads((run_dir / "d18" / "result.json").read_text())["extra"]["downloads"]]
    assert files == ["downloads/report_1.txt", "downloads/report_1_2.txt"]
    (long_file,) = [d["file"] for d in json.loads((run_dir / "d19" / "result.json").read_text())["extra"]["downloads"]]
    assert long_file.endswith(".pdf") and len(long_file.rsplit("/", 1)[1]) <= 120
