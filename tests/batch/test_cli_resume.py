"""`stagehand-py run` end to end: a run interrupted with Ctrl-C, then --resume."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

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


def test_interrupted_run_resumes_where_it_stopped(server, tmp_path: Path) -> None:
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

    first = cli("--task", "task.json", "--samples", "samples.csv", "--no-progress", *common, env={**env, "SCRIPTED_RUNNER_HANG": "p5"})
    try:
        wait_for(lambda: log.exists() and "p5" in log.read_text().split(), timeout=120)
        first.send_signal(signal.SIGINT)
        out, err = first.communicate(timeout=60)
    finally:
        first.kill()
    assert first.returncode == 130, err
    assert "continue with `stagehand-py run --resume`" in err
    (run_dir,) = (tmp_path / "evidence").glob("run_*")
    assert json.loads((run_dir / "p5" / "checkpoint.json").read_text())["state"] == "running"
    assert not (run_dir / "p5" / "result.json").exists() and not (run_dir / "combined.csv").exists()
    assert log.read_text().split() == ["p3", "p1", "p2", "p5"]

    # resume: spec and samples come from the run folder; only p5 and p4 run again
    second = cli("--resume", *common, env=env)
    out, err = second.communicate(timeout=180)
    assert second.returncode == 0, err
    assert log.read_text().split() == ["p3", "p1", "p2", "p5", "p5", "p4"]
    assert "done 5  partial_success 0  failed 0  needs_review 0  (skipped, already complete: 3)" in out
    assert "samples" in err and "done 5" in err  # the progress bar's last state, with counts per status
    result = json.loads((run_dir / "p5" / "result.json").read_text())
    assert result["status"] == "done" and result["attempt"] == 2 and result["input"] == {"note": "row 5"}
    with (run_dir / "combined.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [r["sample_id"] for r in rows] == ["p1", "p2", "p3", "p4", "p5"]
    assert rows[3]["data.name"] == "Wool Beanie" and (run_dir / "report.html").exists()
