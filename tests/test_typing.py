"""Users type-check their own code: a file written against the docs passes ``mypy --strict``.

Only the user's file is judged (``--follow-imports=silent``): errors inside stagehand_py are the
package's own static check's business.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def _mypy(path: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mypy", reason="mypy is in the dev extra")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--cache-dir", str(cache),
         "--no-error-summary", str(path)],
        capture_output=True, text=True, timeout=600, cwd=HERE.parent,
    )


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One mypy cache for both checks: the second reads stagehand_py and its dependencies from it
    instead of analysing them again (same flags; a checked file's own entry follows its content)."""
    return tmp_path_factory.mktemp("mypy") / "cache"


def test_a_user_script_written_against_the_docs_type_checks(cache: Path) -> None:
    result = _mypy(HERE / "typing" / "user_script.py", cache)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_control_a_wrong_call_is_reported(tmp_path: Path, cache: Path) -> None:
    # Control: the same check catches a misuse of the typed surface (a str where a Page goes,
    # an int where a message's content goes).
    bad = tmp_path / "bad_script.py"
    bad.write_text(
        "from stagehand_py import Stagehand\nfrom stagehand_py.llm import SystemMessage\n"
        "Stagehand(page='not a page')\nSystemMessage(3)\n"
        "def use(sh: Stagehand) -> None:\n    sh.agent(mode='web', max_step=3)\n",
        encoding="utf-8",
    )
    result = _mypy(bad, cache)
    assert result.returncode == 1
    assert 'Argument "page" to "Stagehand"' in result.stdout
    assert 'Argument 1 to "SystemMessage"' in result.stdout
    assert '"mode" to "agent" of "Stagehand"' in result.stdout and '"max_step"' in result.stdout, result.stdout
