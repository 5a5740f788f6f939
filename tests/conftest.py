"""Shared fixtures: local HTTP servers over tests/assets and a real Chromium via Playwright.

* ``server``        session; http://127.0.0.1:<port>/ — ``.url("forms.html")``, ``.prefix``,
                    ``.origin``, ``.route(path, handler)`` (see tests/_server.py).
* ``cross_server``  session; the same folder at http://localhost:<other port>/ — a different
                    site from ``server``, so its frames run out of process.
* ``pw``            session; the async Playwright object.
* ``browser``       session; Debian's Chromium, headless, with the flags in tests/_browser.py.
* ``launched_stagehand`` session; a ``Stagehand.launch()``, for ``_browser.stagehand_beside``.
* ``context``       function; a fresh BrowserContext, closed after the test.
* ``page``          function; a new Page in ``context``.
* ``embedded_model`` session; the pinned embedded model (a ``LocalModel``), for the real-model files.
* ``mypy_cache_dir`` session; the mypy cache tests/test_static_checks.py and tests/test_typing.py share.
* ``page_kind``     "wrapped" or "launched" (parametrised): the two page kinds a user has, a page
                    the user launched and wrapped (``Stagehand(page)``) and one in the browser
                    ``Stagehand.launch()`` started.
* ``new_stagehand`` ``await new_stagehand(**options)``: a Stagehand of that kind on a fresh page
                    (a context of its own in the launched Chromium for "launched",
                    ``_browser.stagehand_beside``), closed after the test.

Under xdist (scripts/test.sh: ``-n 3 --dist loadfile --no-loadscope-reorder``) the files that run
for minutes are handed out first, the real-model files as one unit and the two mypy files as
another; see :data:`LONG_FILES` and :data:`UNITS`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from _browser import CHROMIUM_EXECUTABLE, launch_chromium, new_stagehand_of_kind
from _server import StaticServer, start_pair
from playwright.async_api import async_playwright

from stagehand_py import Stagehand

# pytest's own fixture for running pytest on a scratch project (tests/plugin).
pytest_plugins = ["pytester"]

#: Files that run for a minute or more, or long for their few tests (which would put them among
#: the last files handed out, one worker running them alone at the end), with an estimate of their
#: seconds on two idle cores:
#: the lead's idle run for the real-model and Ray-start files; the others scaled from their wall
#: time alone here by mypy's (32 CPU seconds, ~400 s wall at the same load: these shared cores
#: stretch wall times 10-25x). Only the order matters. xdist hands a worker one unit of work at a
#: time in the order collected here; its default order (most tests first) put these few-test files
#: last, so one worker ran them alone while the other idled. Longest first, then the rest with the
#: most tests first (xdist's own heuristic).
LONG_FILES = {
    "tests/test_real_model.py": 480,
    "tests/test_replay_real_model.py": 200,
    "tests/llm/test_local_engine.py": 120,
    "tests/plugin/test_plugin_models.py": 80,
    # The Ray files, from the fresh-clone CI run of 27 Nov (per-file seconds of its "time per worker"
    # lines) scaled by what the fifth session's changes took off each file -n 0 on the same load:
    # test_ray_engine 88 s x 0.82, test_ray_start 67 s x 0.31, test_cli_resume 52 s x 0.44; the
    # hostile batch unchanged (its Ray half is the CLI starting its own cluster and workers).
    "tests/batch/test_ray_engine.py": 72,
    "tests/batch/test_hostile_batch.py": 37,
    "tests/batch/test_cli_resume.py": 23,
    "tests/batch/test_ray_start.py": 21,
    # Long files with many tests: xdist's order (most tests first) still put them after every file
    # above, though they run longer; from the same CI run, the five the fifth session sped up
    # scaled by their -n 0 ratios (redirect hops 0.39, url encodings 0.52, slow submit 0.62,
    # entry points 0.37, replay 0.74). Redirect hops scaled again by its -n 0 ratio 0.58 (s10: the
    # image/frame/fetch cases no longer wait for network quiet, the speculation waits poll at 50 ms).
    "tests/security/test_redirect_hops.py": 73,
    # test_replay's exported files moved to test_export (issue 38): their pytest, mypy and CLI
    # subprocesses, 76 + 18 s of test_replay's 191 s -n 0 at load 6-12 before the split.
    "tests/agent/test_export.py": 100,
    "tests/agent/test_replay.py": 45,
    "tests/security/test_url_encodings.py": 68,
    "tests/operations/test_slow_submit.py": 58,
    "tests/security/test_entry_points.py": 34,
    # The second wave's four, scaled the same way (snapshot pages 0.56, late content 0.96,
    # allowlist channels 0.77, closed roots reach 0.71).
    "tests/snapshot/test_snapshot_pages.py": 41,
    "tests/docs/test_docs.py": 63,
    "tests/operations/test_late_content.py": 58,
    "tests/security/test_allowlist_channels.py": 44,
    "tests/snapshot/test_closed_roots_reach.py": 33,
    # mypy strict on the package, cold cache (28 s -n 0 at load 2.5 on 28 Nov), then in the same unit
    # (:data:`UNITS`) mypy --strict on user scripts on the package's warm cache (1.5 s; 6 s cold).
    "tests/test_static_checks.py": 35,
    "tests/test_typing.py": 2,
    # Hypothesis: 30 random pages per path (160 s -n 0 on the loaded cores of 27 Nov).
    "tests/snapshot/test_snapshot_property.py": 35,
    # A pytest run with pytest-playwright-asyncio (installed alone once: seconds on a fresh clone).
    "tests/plugin/test_playwright_asyncio.py": 20,
    # Two MCP servers in subprocesses, each with its browser (41 s -n 0 on the loaded cores).
    "tests/mcp_server/test_mcp_server.py": 10,
    # The Stagehand's own guard: 23 tests, each waiting for the browser's speculation and redirect
    # events (62 s -n 0 on loaded cores, 86 s beside another file); the plugin marker's one pytest
    # subprocess with its own Chromium (57 s beside others on loaded cores).
    "tests/security/test_stagehand_guard.py": 25,
    "tests/plugin/test_plugin_allowed_domains.py": 12,
}

#: The files that run the embedded model (2 GB, llama.cpp threads on both cores): one unit of work
#: under xdist, so one worker runs them one after another (the first unit handed out) and two
#: engines never fight over the two cores, while the other worker takes everything else.
REAL_MODEL_FILES = ("tests/test_real_model.py", "tests/test_replay_real_model.py", "tests/llm/test_local_engine.py",
                    "tests/plugin/test_plugin_models.py")
REAL_MODEL_UNIT = "the real-model files"
#: The two files that run mypy: one unit, the package's check first, so the user scripts' checks
#: (tests/test_typing.py) read the package from its cache (:func:`mypy_cache_dir`) instead of
#: analysing it again.
MYPY_FILES = ("tests/test_static_checks.py", "tests/test_typing.py")
#: Files kept together on one worker under ``--dist loadfile``, run in the order given.
UNITS = {REAL_MODEL_UNIT: REAL_MODEL_FILES, "the mypy files": MYPY_FILES}
_UNIT_OF = {path: unit for unit, paths in UNITS.items() for path in paths}


def xdist_unit(nodeid: str) -> str:
    """The unit of work a test belongs to under ``--dist loadfile``: its file, or its unit in :data:`UNITS`."""
    path = nodeid.split("::", 1)[0]
    return _UNIT_OF.get(path, path)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker, order the units for :data:`LONG_FILES` (a unit's files in their order in
    :data:`UNITS`, each file's tests in theirs)."""
    if not hasattr(config, "workerinput"):
        return  # one process: the order does not change the time (the mypy files are collected in unit order)
    by_file: dict[str, list[pytest.Item]] = {}
    for item in items:
        by_file.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    by_unit: dict[str, list[str]] = {}
    for name in by_file:
        by_unit.setdefault(_UNIT_OF.get(name, name), []).append(name)
    for unit, names in by_unit.items():
        if unit in UNITS:
            names.sort(key=UNITS[unit].index)

    def longest_first(unit: str) -> tuple[int, int]:
        names = by_unit[unit]
        return -sum(LONG_FILES.get(name, 0) for name in names), -sum(len(by_file[name]) for name in names)

    items[:] = [item for unit in sorted(by_unit, key=longest_first) for name in by_unit[unit] for item in by_file[name]]


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` with the real-model files as one unit (:data:`REAL_MODEL_FILES`)."""
    if config.getvalue("dist") != "loadfile":
        return None  # xdist's own scheduler
    from xdist.scheduler import LoadFileScheduling

    class ModelFilesTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_unit(nodeid)

    return ModelFilesTogether(config, log)


class WorkerTimes:
    """In the xdist controller: when each worker finished and which files took its time, printed
    at the end of the run, so a CI log shows whether the workers ended together (the wall time
    is the later one) and where a worker's minutes went."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.ended: dict[str, float] = {}
        self.by_file: dict[str, dict[str, float]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        node = getattr(report, "node", None)
        if node is None:
            return
        worker = node.gateway.id
        self.ended[worker] = time.monotonic() - self.started
        files = self.by_file.setdefault(worker, {})
        path = report.nodeid.split("::", 1)[0]
        files[path] = files.get(path, 0.0) + report.duration

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.ended:
            return
        terminalreporter.section("time per worker")
        for worker in sorted(self.ended):
            files = self.by_file[worker]
            slowest = ", ".join(f"{path} {seconds:.0f} s" for path, seconds in
                                sorted(files.items(), key=lambda item: -item[1])[:8])
            terminalreporter.write_line(f"{worker}: last test ended at {self.ended[worker]:.0f} s, "
                                        f"{sum(files.values()):.0f} s in {len(files)} files; slowest: {slowest}")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("numprocesses", None) and not hasattr(config, "workerinput"):
        config.pluginmanager.register(WorkerTimes(), "stagehand-worker-times")


@pytest.fixture(autouse=True, scope="session")
def _no_local_model_files_in_session_fixtures(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Session fixtures (a session-wide Stagehand with no model) never pick up the developer's local
    GGUF files either: a Stagehand whose default is the embedded model loads it in the background.
    (Set after collection: tests/llm/_local_model.py reads the real folder when it is imported.)"""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("STAGEHAND_MODELS_DIR", str(tmp_path_factory.getbasetemp() / "no-local-models"))
        monkeypatch.delenv("STAGEHAND_LOCAL_MODEL", raising=False)
        yield


@pytest.fixture(autouse=True)
def _no_local_model_files(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tests never pick up the developer's local GGUF files (examples would run a real model)."""
    monkeypatch.setenv("STAGEHAND_MODELS_DIR", str(tmp_path_factory.getbasetemp() / "no-local-models"))
    monkeypatch.delenv("STAGEHAND_LOCAL_MODEL", raising=False)


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def embedded_model() -> AsyncIterator[Any]:
    """The pinned embedded model with the settings ``local/<file>`` gets (n_ctx=8192), one engine
    for the real-model files that run it as a user's process does (tests/test_real_model.py,
    tests/test_replay_real_model.py; one unit, :data:`UNITS`): loaded once, its prompt cache warm
    from file to file. Skips the test, saying why, when the model or the engine is absent. At the
    end every engine is freed (the agent example makes a model of its own from the same file and
    settings, which shares this engine, and does not free it)."""
    from llm._local_model import require_local_model

    from stagehand_py.llm import LocalModel
    from stagehand_py.llm._providers._local import release_local_models

    shared = LocalModel(require_local_model(), n_ctx=8192)
    yield shared
    await shared.aclose()
    release_local_models()


@pytest.fixture(scope="session")
def mypy_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One mypy cache for the session (both runs pass the same cache-affecting options: pyproject's
    strict configuration and ``--follow-imports=silent``): tests/test_static_checks.py fills it with
    the package, tests/test_typing.py's user scripts then read the package from it. A module cached
    with its errors silenced is checked again when it is a source (mypy abandons that entry), so
    the order never hides an error of the package."""
    return tmp_path_factory.mktemp("mypy") / "cache"


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


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def launched_stagehand(pw):
    """One ``Stagehand.launch()`` per session (per xdist worker): tests of the launched page kind
    get a context of their own in its browser (``_browser.stagehand_beside``) instead of a
    Chromium each."""
    sh = await Stagehand.launch(executable_path=CHROMIUM_EXECUTABLE, _playwright=pw)
    assert sh._session.direct is not None  # the launched path really is the direct one
    yield sh
    await sh.close()


@pytest_asyncio.fixture(loop_scope="session")
async def context(browser):
    context = await browser.new_context()
    yield context
    await context.close()


@pytest_asyncio.fixture(loop_scope="session")
async def page(context):
    return await context.new_page()


@pytest.fixture(params=["wrapped", "launched"])
def page_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest_asyncio.fixture(loop_scope="session")
async def new_stagehand(page_kind, context, launched_stagehand):
    async with contextlib.AsyncExitStack() as made:
        yield lambda **options: new_stagehand_of_kind(made, page_kind, context, launched_stagehand, **options)
