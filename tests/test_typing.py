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


def _mypy(*paths: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mypy", reason="mypy is in the dev extra")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--cache-dir", str(cache),
         "--no-error-summary", *map(str, paths)],
        capture_output=True, text=True, timeout=600, cwd=HERE.parent,
    )


@pytest.fixture
def cache(mypy_cache_dir: Path) -> Path:
    """The session's mypy cache (tests/conftest.py): tests/test_static_checks.py, run first in the
    same unit, left stagehand_py and its dependencies in it, so these checks read them from it
    instead of analysing them again (same flags; a checked file's own entry follows its content)."""
    return mypy_cache_dir


def test_a_user_script_written_against_the_docs_type_checks(cache: Path) -> None:
    result = _mypy(HERE / "typing" / "user_script.py", cache=cache)
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
    result = _mypy(bad, cache=cache)
    assert result.returncode == 1
    assert 'Argument "page" to "Stagehand"' in result.stdout
    assert 'Argument 1 to "SystemMessage"' in result.stdout
    assert '"mode" to "agent" of "Stagehand"' in result.stdout and '"max_step"' in result.stdout, result.stdout


def test_an_exported_agent_run_type_checks(tmp_path: Path, cache: Path) -> None:
    # The files to_pytest (async, sync=True, expect_done=True) and to_script write for the orders run of
    # tests/agent/test_export.py (its stored recording: acts, extracts with a schema, save_progress, the end
    # state) type-check; here, on this module's warm cache, rather than a cold mypy of their own there.
    from stagehand_py.agent._export import write_script
    from stagehand_py.agent._recording import load_recording

    recording = load_recording(HERE / "typing" / "orders_run.json")
    files = [write_script(recording, tmp_path / "test_orders.py", test=True),
             write_script(recording, tmp_path / "test_orders_sync.py", test=True, sync=True),
             write_script(recording, tmp_path / "test_orders_claim.py", test=True, expect_done=True),
             write_script(recording, tmp_path / "orders.py", test=False)]
    # Control: the same check reports a wrong type in such a file (a number where the variables go).
    bad = tmp_path / "test_orders_edited.py"
    bad.write_text(files[0].read_text().replace("PageView.read(stagehand, variables=VARIABLES)",
                                                "PageView.read(stagehand, variables=1)", 1))
    result = _mypy(*files, bad, cache=cache)
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and errors[0].startswith(str(bad)) and '"variables"' in errors[0], result.stdout + result.stderr
