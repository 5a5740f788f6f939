"""examples/agent_example.py runs end to end with a scripted model, and without one."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

import agent_example

from ._script import AgentScript, call


def _products(seen):
    pairs = re.findall(r"link: (.+)\n\s*\[\d+-\d+\] StaticText: (\$[\d.]+)", seen.outline)
    return [{"name": n, "price": p} for n, p in pairs]


async def test_agent_example_with_a_scripted_model(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    script = AgentScript([
        lambda s: call("act", element_id=s.id("link", "Products")),
        lambda s: call("save_progress", data={"products": _products(s)}),
        lambda s: call("done", message="4 products", output={"products": _products(s)}),
    ])
    assert await agent_example.main(model=script, checkpoint_dir=str(tmp_path)) == 0
    out = capsys.readouterr().out
    assert "step 1: act" in out and "status: done (4 products)" in out
    assert "  Trail Runner Shoes: $89.00" in out and "  Rain Shell Jacket: $120.00" in out
    saved = json.loads((tmp_path / "checkpoint.json").read_text())
    assert saved["status"] == "done" and len(saved["data"]["products"]) == 4


async def test_agent_example_without_a_model(monkeypatch, capsys: pytest.CaptureFixture[str]) -> None:
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "STAGEHAND_BASE_URL", "STAGEHAND_MODEL"):
        monkeypatch.delenv(var, raising=False)
    assert await agent_example.main() == 0
    assert "No model is configured" in capsys.readouterr().out
