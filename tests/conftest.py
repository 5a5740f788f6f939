"""Shared fixtures: local HTTP servers over tests/assets and a real Chromium via Playwright.

* ``server``        session; http://127.0.0.1:<port>/ — ``.url("forms.html")``, ``.prefix``,
                    ``.origin``, ``.route(path, handler)`` (see tests/_server.py).
* ``cross_server``  session; the same folder at http://localhost:<other port>/ — a different
                    site from ``server``, so its frames run out of process.
* ``pw``            session; the async Playwright object.
* ``browser``       session; Debian's Chromium, headless, with the flags in tests/_browser.py.
* ``context``       function; a fresh BrowserContext, closed after the test.
* ``page``          function; a new Page in ``context``.
"""

from __future__ import annotations

import pytest
import pytest_asyncio
from _browser import launch_chromium
from _server import StaticServer, start_pair
from playwright.async_api import async_playwright

# pytest's own fixture for running pytest on a scratch project (tests/plugin).
pytest_plugins = ["pytester"]


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
