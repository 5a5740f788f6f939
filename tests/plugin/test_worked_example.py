"""The worked pytest example (examples/pytest_flow/) replays in CI with no model at all.

Its cassette was recorded once with the embedded model (`--stagehand-record once`). Here it runs
with the kill switch on and no model installed: a pass means every answer came from the cassette.
When the page changes under it, the test fails with the evidence the plugin leaves: the outline,
the model calls (no secret values) and a screenshot. The guide's code block is this file.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
FLOW = ROOT / "examples" / "pytest_flow"
CASSETTE = FLOW / "cassettes" / "test_shop_flow" / "test_sign_in_then_read_the_catalogue.json"


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "STAGEHAND_MODEL")}
    clean.update(STAGEHAND_MODELS_DIR=str(tmp_path / "no-models"), STAGEHAND_BLOCK_MODEL_REQUESTS="1", **env)
    clean["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), clean.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(FLOW),
         "--stagehand-artifacts", str(tmp_path / "artifacts")],
        cwd=ROOT, env=clean, capture_output=True, text=True, timeout=300,
    )


def test_the_recorded_flow_replays_with_no_model(tmp_path: Path) -> None:
    recorded = json.loads(CASSETTE.read_text(encoding="utf-8"))
    assert recorded["recorded_with"]["model"].endswith("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
    purposes = [i["request"]["model_request"]["purpose"] for i in recorded["interactions"]]
    assert purposes[:1] == ["observe"] and "extract" in purposes
    assert "correct horse" not in CASSETTE.read_text(encoding="utf-8")  # the password never reached the model
    done = _run(tmp_path)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout


def test_a_changed_page_fails_with_evidence(tmp_path: Path) -> None:
    done = _run(tmp_path, SHOP_VARIANT="renamed")
    assert done.returncode == 1, done.stdout[-4000:]
    assert "has no unused recording for a 'observe' request" in done.stdout
    assert "--stagehand-record once" in done.stdout  # ...and how to record again
    [folder] = list((tmp_path / "artifacts").iterdir())
    assert {p.name for p in folder.iterdir()} >= {"outline.txt", "model_calls.json", "screenshot.png"}
    assert "Login name" in (folder / "outline.txt").read_text(encoding="utf-8")
    assert "correct horse" not in (folder / "model_calls.json").read_text(encoding="utf-8")


def test_the_guide_shows_this_example_verbatim() -> None:
    guide = (ROOT / "docs" / "guides" / "pytest.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", guide, re.DOTALL)
    assert (FLOW / "test_shop_flow.py").read_text(encoding="utf-8") in blocks
