"""The runnable snippet in docs/llm.md runs as written (the docs cannot silently rot)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "llm.md"


def test_testing_snippet_in_docs_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)
    snippet = next(b for b in blocks if "asyncio.run(main())" in b and "blocked:" in b)
    proc = subprocess.run(
        [sys.executable, "-c", snippet], capture_output=True, text=True, timeout=60,
        cwd=DOC.parents[1], env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(DOC.parents[1])},
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("requests=1 ")
    assert "$.year: Field required" in proc.stdout
    assert lines[-2] == "3 {'title': 1}"
    assert lines[-1].startswith("blocked: a real model request to openai/gpt-4.1-mini")
