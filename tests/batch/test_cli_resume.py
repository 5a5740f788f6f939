"""`stagehand-py run` end to end: a run interrupted with Ctrl-C (what finished is reported, the rest
recorded as cancelled), then the --resume command it names."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _default_ctrl_c() -> None:
    # A background job of a non-interactive shell (how CI may start us) inherits SIGINT as
    # ignored; a user at a terminal has the default, which is what this test plays.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cli(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "stagehand_py.batch._cli", "run", *args],
        cwd=env["WORKDIR"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_default_ctrl_c,
    )


def wait_for(predicate, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.mark.parametrize("engine", [
    pytest.param([], id="local"),
    # Interrupted on the Ray engine (one worker, so rows run in the same order), resumed locally.
    pytest.param(["--engine", "ray", "--workers", "1"], id="ray"),
])
def test_interrupted_run_resumes_where_it_stopped(server, tmp_path: Path, engine: list[str]) -> None:
    (tmp_path / "task.json").write_text(json.dumps({
        "goal": "Record each product's name and price", "required_fields": ["name", "price"],
        "required_screenshots": ["product page"], "max_time": 60,
    }))
    with (tmp_path / "samples.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "url", "note"])
        for i in (3, 1, 2, 5, 4):
            writer.writerow([f"p{i}", server.url(f"products/{i}.html"), f"row {i}"])
    log = tmp_path / "started.log"
    env = {
        "PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), "WORKDIR": str(tmp_path),
        "PYTHONPATH": f"{ROOT}{os.pathsep}{HERE}", "SCRIPTED_RUNNER_LOG": str(log),
    }
    common = ["--evidence-dir", "evidence", "--runner", "_scripted_runner:make_runner", "--concurrency", "1", "--rate-limit", "0"]

    first = cli("--task", "task.json", "--samples", "samples.csv", "--no-progress", *common, *engine,
                env={**env, "SCRIPTED_RUNNER_HANG": "p5", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"})
    try:
        wait_for(lambda: log.exists() and "p5" in log.read_text().split(), timeout=300)  # Ray may start slowly
        first.send_signal(signal.SIGINT)
        out, err = first.communicate(timeout=120)
    finally:
        first.kill()
    assert first.returncode == 130, err
    # Ctrl-C stops the row in flight on the worker too, so the worker closes its browser at once
    # (the Ray engine used to wait 30 s for a row nobody awaited, then kill the worker).
    assert "did not close their browsers" not in err, err
    (run_dir,) = (tmp_path / "evidence").glob("run_*")
    relative = run_dir.relative_to(tmp_path)
    assert ("interrupted: 3 finished samples are kept and 2 are recorded as cancelled; "
            f"continue with `stagehand-py run --resume {relative}`") in err
    assert log.read_text().split() == ["p3", "p1", "p2", "p5"]
    # Every row has its one recorded outcome: the interrupted p5 and the never started p4 as
    # cancelled (not complete: --resume runs them), and the reports are written all the same.
    for sid, attempt in (("p5", 1), ("p4", 0)):
        assert json.loads((run_dir / sid / "checkpoint.json").read_text())["state"] == "cancelled"
        stored = json.loads((run_dir / sid / "result.json").read_text())
        assert (stored["status"], stored["attempt"]) == ("cancelled", attempt) and "cancelled by the user" in stored["error"]
    with (run_dir / "combined.csv").open() as handle:
        assert [(r["sample_id"], r["status"]) for r in csv.DictReader(handle)] == [
            ("p1", "done"), ("p2", "done"), ("p3", "done"), ("p4", "cancelled"), ("p5", "cancelled")]
    assert "cancelled: <b>2</b>" in (run_dir / "report.html").read_text()
    assert "done 3  unverified 0  partial_success 0  failed 0  needs_review 0  cancelled 2" in out

    # resume, with the command the message named: spec and samples come from the run folder; only p5 and p4 run again
    second = cli("--resume", str(relative), *common, env=env)
    out, err = second.communicate(timeout=180)
    assert second.returncode == 0, err
    assert log.read_text().split() == ["p3", "p1", "p2", "p5", "p5", "p4"]
    assert "done 5  unverified 0  partial_success 0  failed 0  needs_review 0  (skipped, already complete: 3)" in out
    assert "samples" in err and "done 5" in err  # the progress bar's last state, with counts per status
    result = json.loads((run_dir / "p5" / "result.json").read_text())
    assert result["status"] == "done" and result["attempt"] == 2 and result["input"] == {"note": "row 5"}
    with (run_dir / "combined.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [r["sample_id"] for r in rows] == ["p1", "p2", "p3", "p4", "p5"]
    assert rows[3]["data.name"] == "Wool Beanie" and (run_dir / "report.html").exists()
