"""The `stagehand` fixture on pytest-playwright-asyncio's `page`, in an environment of its own.

pytest-playwright-asyncio and pytest-playwright both define `page` and cannot share one
environment, so this builds a second virtualenv (`.venv-playwright-asyncio`, beside `.venv`,
kept between runs) with stagehand_py and pytest-playwright-asyncio, then runs a scratch project in
it: the `stagehand` fixture must wrap the plugin's own async `page` (the same object the test
gets), on Debian's Chromium.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
VENV = ROOT / ".venv-playwright-asyncio"
PYTHON = VENV / "bin" / "python"

PROJECT_TEST = '''
import pytest
from stagehand_py import Stagehand
from stagehand_py.testing import FunctionLLM

@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": "/usr/bin/chromium",
            "args": ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"]}

@pytest.mark.stagehand(model=FunctionLLM(lambda r: {"data": {"heading": "Hello"}, "instruction_satisfied": True}))
async def test_wraps_the_plugins_page(stagehand, page):
    assert isinstance(stagehand, Stagehand) and stagehand.page is page
    await page.set_content("<h1>Hello</h1>")
    assert "heading: Hello" in (await stagehand.snapshot()).tree
    data = await stagehand.extract("the heading", schema={"type": "object", "properties": {"heading": {"type": "string"}}})
    assert data == {"heading": "Hello"}
'''

INI = """[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = session
asyncio_default_test_loop_scope = session
"""


def _environment() -> Path:
    if not PYTHON.exists() or subprocess.run([str(PYTHON), "-c", "import pytest_playwright_asyncio, stagehand_py"],
                                             capture_output=True).returncode != 0:
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, timeout=300)
        install = subprocess.run([str(PYTHON), "-m", "pip", "install", "-q", "-e", str(ROOT), "pytest-playwright-asyncio"],
                                 capture_output=True, text=True, timeout=900)
        if install.returncode != 0:
            pytest.fail(f"could not build {VENV}: {install.stderr[-2000:]}")
    return PYTHON


def test_stagehand_fixture_on_pytest_playwright_asyncio_page(tmp_path: Path) -> None:
    python = _environment()
    (tmp_path / "test_async_page.py").write_text(PROJECT_TEST, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text(INI, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "ANTHROPIC", "PYTEST_"))}
    env["PYTHONPATH"] = str(ROOT)  # this checkout's stagehand_py, whichever the venv was built from
    done = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout
