"""The `stagehand` fixture on pytest-playwright-asyncio's `page`, in a pytest run of its own.

pytest-playwright-asyncio and pytest-playwright both define `page` and cannot be active in one
pytest run. The dev extra installs pytest-playwright, so the plugin under test is installed
(`pip install --no-deps --target`, its dependencies are the dev extra's own) into a folder beside
`.venv` (`.playwright-asyncio-plugin`, kept between runs) and put on the path of a pytest run on
a scratch project where pytest-playwright is turned off (`-p no:playwright`, as the project's own
run does). pytest loads pytest-playwright-asyncio through its entry point, as in a user's
environment; the `stagehand` fixture must wrap the plugin's own async `page` (the same object
the test gets), on Debian's Chromium. (A second virtualenv with a full `pip install -e .` cost CI
about 90 s more on a fresh clone, for nothing this test checks.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
PLUGIN_DIR = ROOT / ".playwright-asyncio-plugin"

PROJECT_TEST = '''
import pytest
from stagehand_py import Stagehand
from stagehand_py.testing import FunctionLLM

@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": "/usr/bin/chromium",
            "args": ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"]}

@pytest.mark.stagehand(model=FunctionLLM(lambda r: {"data": {"heading": "Hello"}, "instruction_satisfied": True}))
async def test_wraps_the_plugins_page(stagehand, page, pytestconfig):
    # The plugin came in through its entry point; pytest-playwright's sync `page` is not active.
    plugins = pytestconfig.pluginmanager
    assert plugins.has_plugin("playwright-asyncio") and not plugins.has_plugin("playwright")
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


def _plugin_dir() -> Path:
    """The folder pytest-playwright-asyncio is installed in (once; a seconds-long install)."""
    if not list(PLUGIN_DIR.glob("pytest_playwright_asyncio-*.dist-info/entry_points.txt")):  # pip writes it last
        install = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(PLUGIN_DIR),
                                  "pytest-playwright-asyncio"], capture_output=True, text=True, timeout=600)
        if install.returncode != 0:
            pytest.fail(f"could not install pytest-playwright-asyncio into {PLUGIN_DIR}: {install.stderr[-2000:]}")
    return PLUGIN_DIR


def test_stagehand_fixture_on_pytest_playwright_asyncio_page(tmp_path: Path) -> None:
    plugin_dir = _plugin_dir()
    (tmp_path / "test_async_page.py").write_text(PROJECT_TEST, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text(INI, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "ANTHROPIC", "PYTEST_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(plugin_dir)])  # this checkout's stagehand_py, and the plugin
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:playwright", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout
