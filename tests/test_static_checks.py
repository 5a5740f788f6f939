"""The package's own static checks, run by the test command (and so by .ci/run).

mypy in strict mode over the package (the configuration is in pyproject.toml), and ruff with the
rule set chosen there over everything we ship or run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, timeout=900, cwd=ROOT)


def test_mypy_strict_on_the_package(mypy_cache_dir: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is in the dev extra")
    # Every module of the package is a source here, so every error in it is reported;
    # --follow-imports=silent only quiets what is outside it (installed packages, whose errors mypy
    # never reports) and makes this cache the one tests/test_typing.py reads the package from.
    result = _run("mypy", "--follow-imports=silent", "--cache-dir", str(mypy_cache_dir), "stagehand_py")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


def test_ruff() -> None:
    pytest.importorskip("ruff", reason="ruff is in the dev extra")
    result = _run("ruff", "check", "--no-cache", "stagehand_py", "tests", "benchmarks", "examples", "scripts")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
