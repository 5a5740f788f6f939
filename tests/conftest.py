"""Shared fixtures: local HTTP servers over tests/assets and a real Chromium via Playwright.

* ``server``        session; http://127.0.0.1:<port>/ — ``.url("forms.html")``, ``.prefix``,
                    ``.origin``, ``.route(path, handler)`` (see tests/_server.py).
* ``cross_server``  session; the same folder at http://localhost:<other port>/ — a different
                    site from ``server``, so its frames run out of process.
* ``pw``            session; the async Playwright object.
* ``browser``       session; Debian's Chromium, headless, with the flags in tests/_browser.py.
* ``context``       function; a fresh BrowserContext, closed after the test.
* ``page``          function; a new Page in ``context``.

Under xdist (scripts/test.sh: ``-n 2 --dist loadfile --no-loadscope-reorder``) the files that run
for minutes are handed out first; see :data:`LONG_FILES`.
"""

from __future__ import annotations

import pytest
import pytest_asyncio
from _browser import launch_chromium
from _server import StaticServer, start_pair
from playwright.async_api import async_playwright

# pytest's own fixture for running pytest on a scratch project (tests/plugin).
pytest_plugins = ["pytester"]

#: Files that run for a minute or more, with an estimate of their seconds on two idle cores:
#: the lead's idle run for the real-model and Ray-start files; the others scaled from their wall
#: time alone here by mypy's (32 CPU seconds, ~400 s wall at the same load: these shared cores
#: stretch wall times 10-25x). Only the order matters. xdist hands a worker one file at a time in
#: the order collected here; its default order (most tests first) put these few-test files last, so
#: one worker ran them alone while the other idled. Longest first, then the rest with the most
#: tests first (xdist's own heuristic).
LONG_FILES = {
    "tests/test_real_model.py": 480,
    "tests/test_replay_real_model.py": 200,
    "tests/llm/test_local_engine.py": 120,
    "tests/batch/test_ray_start.py": 80,
    "tests/plugin/test_plugin_models.py": 80,
    "tests/batch/test_cli_resume.py": 70,
    "tests/batch/test_hostile_batch.py": 70,
    "tests/plugin/test_playwright_asyncio.py": 60,  # builds its own virtualenv on a fresh clone
    "tests/test_static_checks.py": 35,  # mypy strict, cold cache: 32 CPU seconds
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker, order the files for :data:`LONG_FILES` (each file's tests keep their order)."""
    if not hasattr(config, "workerinput"):
        return  # one process: the order does not change the time
    by_file: dict[str, list[pytest.Item]] = {}
    for item in items:
        by_file.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    ordered = sorted(by_file, key=lambda name: (-LONG_FILES.get(name, 0), -len(by_file[name])))
    items[:] = [item for name in ordered for item in by_file[name]]


@pytest.fixture(autouse=True)
def _no_local_model_files(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tests never pick up the developer's local GGUF files (examples would run a real model)."""
    monkeypatch.setenv("STAGEHAND_MODELS_DIR", str(tmp_path_factory.getbasetemp() / "no-local-models"))
    monkeypatch.delenv("STAGEHAND_LOCAL_MODEL", raising=False)


@pytest.fixture(scope="session")
def _server_pair():
    same, cross = start_pair()
    yield same, cross
    same.stop()
    cross.stop()


@pytest.fixture(scope="session")
def server(_server_pair) -> StaticServer:
    return _server_pair[0]


@pytest.fixture(scope="session")
def cross_server(_server_pair) -> StaticServer:
    return _server_pair[1]


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def pw():
    async with async_playwright() as playwright:
        yield playwright


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser(pw):
    browser = await launch_chromium(pw)
    yield browser
    await browser.close()


@pytest_asyncio.fixture(loop_scope="session")
async def context(browser):
    context = await browser.new_context()
    yield context
    await context.close()


@pytest_asyncio.fixture(loop_scope="session")
async def page(context):
    return await context.new_page()
