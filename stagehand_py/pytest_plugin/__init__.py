"""pytest plugin: ``stagehand`` / ``stagehand_sync`` fixtures, model cassettes, failure evidence.

Loaded through the ``pytest11`` entry point whenever stagehand_py is installed, so it does
nothing until a test asks for one of its fixtures by name (no autouse fixtures) and imports
Playwright and the rest of stagehand_py only then.

Options (group ``stagehand``), each also a keyword of ``@pytest.mark.stagehand(...)``:

- ``--stagehand-model`` / ``model=``: a model string, an ``LLMClient``, any model object, or a
  test double (``FunctionLLM``/``ScriptedLLM``). Default: the library's one rule,
  :func:`stagehand_py.llm.default_model` (``$STAGEHAND_BASE_URL``, ``$STAGEHAND_MODEL``, a provider
  key, else the embedded model when it is installed), else ``openai/gpt-4.1-mini`` (for cassettes).
- ``--stagehand-base-url`` / ``base_url=``: an OpenAI-compatible server for a model string.
- ``--stagehand-choice-mode`` / ``choice_mode=True``: answers pick among the page's own lines.
- ``--stagehand-record none|once|all|live``: model-call cassettes beside the test module, at
  ``<module dir>/cassettes/<module>/<test>.json``. ``none`` (default) replays a cassette if
  there is one and blocks every real model request; ``once`` records what is missing;
  ``all`` re-records; ``live`` runs the real model and writes no cassette. Test doubles always
  answer. Hosted models are recorded at the HTTP level; the embedded model and other model
  objects at the model boundary (a replay needs neither the model nor its engine).
- ``--stagehand-cache-dir``: the action cache directory handed to each ``Stagehand``.
- ``allowed_domains=`` (marker only): glob patterns the test's browser context is held to, from
  before the test body runs (the library's one guard: ``Stagehand(allowed_domains=...)``).
- ``--stagehand-artifacts``: where failure evidence goes (default ``stagehand-artifacts``).
- ``--stagehand-tracing on|retain-on-failure|off``: a Playwright trace of each test's context,
  every variable value scrubbed, kept as ``trace.zip`` in the test's artifacts folder (always, or
  for a failed test only); pytest-playwright's ``--tracing`` is the same for its own ``page``.

On a failed test the plugin saves the page's snapshot outline, the model requests and
responses (secret values redacted), a screenshot and ``run.html`` (the run viewer: each verb or
agent step with its screenshot, the element it chose boxed, the answer and the outcome; see
``stagehand-py show``) under the artifacts folder, and adds the outline and the list of files to
the test's report.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from ._browsers import SYNC_CHROMIUM, SyncChromium, runs_on_a_loop
from ._config import ARTIFACTS_DEFAULT, StagehandTestConfig
from ._config import is_test_double as is_test_double  # importable from here, as before the split
from ._evidence import CALL_REPORT, TestViewer, async_evidence, failed, sync_evidence
from ._traffic import ModelTraffic, client_for, stagehand_kwargs

__all__ = ["StagehandTestConfig"]

_RECORD_MODES = ("none", "once", "all", "live")
_MARKER_KEYS = frozenset({"model", "variables", "base_url", "choice_mode", "allowed_domains"})
#: The model named when the environment configures none: a cassette recorded with it still replays.
_DEFAULT_MODEL = "openai/gpt-4.1-mini"
_TRAFFIC = pytest.StashKey[ModelTraffic]()


# --- configuration ---------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("stagehand", "stagehand_py: natural-language browser tests")
    group.addoption(
        "--stagehand-model", dest="stagehand_model", default=None, metavar="PROVIDER/MODEL",
        help="model for the stagehand fixtures (default: $STAGEHAND_MODEL, else the hosted default when a "
        f"provider key is set, else the embedded local model when installed, else {_DEFAULT_MODEL}).",
    )
    group.addoption(
        "--stagehand-base-url", dest="stagehand_base_url", default=None, metavar="URL",
        help="an OpenAI-compatible server for the model string (e.g. http://127.0.0.1:8080/v1).",
    )
    group.addoption(
        "--stagehand-choice-mode", dest="stagehand_choice_mode", action="store_true", default=None,
        help="choice mode: observe/act answers pick one of the page's own lines (for small models).",
    )
    group.addoption(
        "--stagehand-record", dest="stagehand_record", default="none", choices=_RECORD_MODES,
        help="model-call cassettes beside each test module: none (replay only, real requests "
        "blocked; default), once (record missing cassettes), all (re-record every cassette), "
        "live (run the real model, no cassette read or written).",
    )
    group.addoption(
        "--stagehand-cache-dir", dest="stagehand_cache_dir", default=None, metavar="DIR",
        help="action cache directory for the stagehand fixtures (default: no cache).",
    )
    group.addoption(
        "--stagehand-artifacts", dest="stagehand_artifacts", default=ARTIFACTS_DEFAULT, metavar="DIR",
        help=f"where a failed test's outline, model calls and screenshot go (default: {ARTIFACTS_DEFAULT}).",
    )
    group.addoption(
        "--stagehand-tracing", dest="stagehand_tracing", default="off", choices=("on", "retain-on-failure", "off"),
        help="a Playwright trace of each stagehand test's context, variable values scrubbed, kept as trace.zip in its "
        "artifacts folder: on (every test), retain-on-failure (failed tests), off (default).",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("stagehand_tracing", "off") != "off" and config.getoption("tracing", "off") not in (None, "off"):
        raise pytest.UsageError("--stagehand-tracing and pytest-playwright's --tracing would both record the test's "
                                "browser context (Playwright records one trace at a time): use one of them.")
    config.addinivalue_line(
        "markers",
        "stagehand(model=None, variables=None, base_url=None, choice_mode=None, allowed_domains=None): per-test "
        "model (a string, an LLMClient, a model object or a test double such as ScriptedLLM), its server and "
        "choice mode, the variables for the stagehand / stagehand_sync fixtures, and the hosts their browser "
        "context is held to.",
    )


def _default_model(environ: Any = None) -> tuple[str, str | None]:
    """The model (and its server) the library's one rule picks, else :data:`_DEFAULT_MODEL`."""
    from ..llm._policy import default_model

    choice = default_model(environ)
    return (choice.model, choice.base_url) if choice is not None else (_DEFAULT_MODEL, None)


def _safe_name(text: str, *, limit: int = 120) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("._") or "test"
    return cleaned[:limit]


def _resolve_config(request: pytest.FixtureRequest) -> StagehandTestConfig:
    config = request.config
    marker = request.node.get_closest_marker("stagehand")
    kwargs: dict[str, Any] = dict(marker.kwargs) if marker else {}
    unknown = set(kwargs) - _MARKER_KEYS
    if unknown or (marker and marker.args):
        raise pytest.UsageError(
            f"@pytest.mark.stagehand takes only {', '.join(sorted(_MARKER_KEYS))} as keywords, got "
            f"{sorted(unknown) or list(marker.args)} on {request.node.nodeid}."
        )
    model = kwargs.get("model") or config.getoption("stagehand_model")
    base_url = kwargs.get("base_url") or config.getoption("stagehand_base_url")
    if not model:
        model, default_base_url = _default_model()
        base_url = base_url or default_base_url
    choice_mode = kwargs.get("choice_mode", config.getoption("stagehand_choice_mode"))
    from .._inputs import check_inputs  # imported late: the plugin loads with every pytest run

    check_inputs("@pytest.mark.stagehand", variables=kwargs.get("variables"))
    from ..browser._guard import check_patterns

    allowed = kwargs.get("allowed_domains")
    allowed_domains = check_patterns(allowed, what="@pytest.mark.stagehand(allowed_domains=...)") if allowed is not None else None
    variables = dict(kwargs.get("variables") or {})
    cache_opt = config.getoption("stagehand_cache_dir")
    module_path = Path(str(request.node.path))
    cassette = module_path.parent / "cassettes" / module_path.stem / f"{_safe_name(request.node.name)}.json"
    artifacts = Path(config.getoption("stagehand_artifacts"))
    if not artifacts.is_absolute():
        artifacts = Path(str(config.rootpath)) / artifacts
    return StagehandTestConfig(
        model=model,
        variables=variables,
        base_url=base_url,
        choice_mode=choice_mode,
        record=config.getoption("stagehand_record"),
        cache_dir=Path(cache_opt) if cache_opt else None,
        cassette_path=cassette,
        allowed_domains=allowed_domains,
        artifacts_dir=artifacts / _safe_name(request.node.nodeid.replace("::", "__").replace("/", "_")),
        tracing=config.getoption("stagehand_tracing"),
    )


@pytest.fixture
def stagehand_config(request: pytest.FixtureRequest) -> StagehandTestConfig:
    """The resolved model, variables, record mode, cache and artifact paths for this test."""
    return _resolve_config(request)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.when == "call":
        item.stash[CALL_REPORT] = report
    return report


def _blocked_in_chain(exc: BaseException) -> BaseException | None:
    from .._errors import CassetteError, ModelRequestBlockedError

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ModelRequestBlockedError | CassetteError):
            return current
        current = current.__cause__ or current.__context__
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    try:
        return (yield)
    except Exception as exc:
        traffic = item.stash.get(_TRAFFIC, None)
        if traffic is None or traffic.recording or _blocked_in_chain(exc) is None:
            raise
        from .._errors import ModelRequestBlockedError

        hint = traffic.how_to_record().replace("{nodeid}", item.nodeid)
        if not hint:
            raise
        raise ModelRequestBlockedError(f"{hint} (underlying error: {type(exc).__name__}: {exc})") from exc


# --- browsers --------------------------------------------------------------------------------------


def _uses_plugin_page(config: pytest.Config, name: str) -> bool:
    return bool(config.pluginmanager.has_plugin(name))


def _missing_pytest_asyncio(*_: Any, **__: Any) -> Any:
    pytest.fail(
        "the `stagehand` fixture is async and needs pytest-asyncio (pip install pytest-asyncio); "
        "or use `stagehand_sync` in a plain test.",
        pytrace=False,
    )


try:
    import pytest_asyncio
except ImportError:  # the async fixtures explain themselves when requested
    pytest_asyncio = None  # type: ignore[assignment]


if pytest_asyncio is not None:

    @pytest_asyncio.fixture(scope="session", loop_scope="session")
    async def stagehand_browser() -> AsyncIterator[Any]:
        """A headless Chromium for the whole session (async Playwright), launched the way
        ``Stagehand.launch()`` does; each ``stagehand`` test gets its own context in it."""
        from ..browser._session import launch_browser

        session = await launch_browser(direct_cdp=False)
        try:
            await session.page.context.close()  # launch_browser's own first page: not needed
            yield session.browser
        finally:
            await session.close()

    @pytest_asyncio.fixture(loop_scope="session")
    async def stagehand_context(stagehand_browser: Any) -> AsyncIterator[Any]:
        """A fresh browser context in the plugin's own Chromium, closed after the test."""
        context = await stagehand_browser.new_context(viewport={"width": 1280, "height": 800})
        try:
            yield context
        finally:
            await context.close()

    @pytest_asyncio.fixture(loop_scope="session")
    async def _stagehand_own_page(stagehand_context: Any) -> Any:
        return await stagehand_context.new_page()

    @pytest_asyncio.fixture(loop_scope="session")
    async def stagehand(request: pytest.FixtureRequest, stagehand_config: StagehandTestConfig, _stagehand_async_page: Any) -> AsyncIterator[Any]:
        """An async ``Stagehand`` on a fresh page: pytest-playwright-asyncio's ``page`` when
        that plugin is active, else a new context in the plugin's own Chromium."""
        from .._stagehand import Stagehand

        item = request.node
        with ModelTraffic(stagehand_config) as traffic:
            item.stash[_TRAFFIC] = traffic
            model = client_for(stagehand_config, traffic)
            sh = Stagehand(_stagehand_async_page, **stagehand_kwargs(Stagehand, stagehand_config, model, traffic))
            viewer = TestViewer(item, stagehand_config, _stagehand_async_page)
            try:
                await sh.__aenter__()  # its allowed_domains guard, before the test body
                await viewer.start()
                yield sh
                if failed(item):
                    await async_evidence(item, stagehand_config, sh, traffic.calls)
            finally:
                await viewer.finish()
                await sh.close()

else:
    stagehand_browser = pytest.fixture(scope="session")(_missing_pytest_asyncio)
    stagehand_context = pytest.fixture(_missing_pytest_asyncio)
    stagehand = pytest.fixture(_missing_pytest_asyncio)


@pytest.fixture
def _stagehand_async_page(request: pytest.FixtureRequest) -> Any:
    # A sync fixture, so that it may pick an async fixture at run time (an async fixture cannot
    # call getfixturevalue on another async fixture); pytest-asyncio runs the one it picks.
    if _uses_plugin_page(request.config, "playwright-asyncio"):
        return request.getfixturevalue("page")
    return request.getfixturevalue("_stagehand_own_page")


@pytest.fixture
def stagehand_sync_browser(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A headless Chromium (sync Playwright) for ``stagehand_sync``: kept from one sync test to the
    next, stopped before an async test and at the end of the session (see ``_browsers``)."""
    chromium = request.config.stash.setdefault(SYNC_CHROMIUM, SyncChromium())
    yield chromium.browser()
    if chromium.stop_after:  # before the session's async fixtures end, or the next test's loop starts
        chromium.stop()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    chromium = item.config.stash.get(SYNC_CHROMIUM, None)
    if chromium is not None and runs_on_a_loop(item):
        chromium.stop()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    chromium = item.config.stash.get(SYNC_CHROMIUM, None)
    if chromium is not None:
        chromium.stop_after = nextitem is None or runs_on_a_loop(nextitem)


def pytest_sessionfinish(session: pytest.Session) -> None:
    chromium = session.config.stash.get(SYNC_CHROMIUM, None)
    if chromium is not None:
        chromium.stop()


@pytest.fixture
def stagehand_sync(request: pytest.FixtureRequest, stagehand_config: StagehandTestConfig) -> Iterator[Any]:
    """A sync ``Stagehand`` (``stagehand_py.sync_api``) on a fresh page: pytest-playwright's
    ``page`` when that plugin is active, else a new context in the plugin's own Chromium."""
    from ..sync_api import Stagehand

    context = None
    if _uses_plugin_page(request.config, "playwright"):
        page = request.getfixturevalue("page")
    else:
        browser = request.getfixturevalue("stagehand_sync_browser")
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
    item = request.node
    try:
        with ModelTraffic(stagehand_config) as traffic:
            item.stash[_TRAFFIC] = traffic
            sh = Stagehand(page, **stagehand_kwargs(Stagehand, stagehand_config, client_for(stagehand_config, traffic),
                                                 traffic))
            viewer = TestViewer(item, stagehand_config, sh._core.page)  # the async view: the viewer awaits
            try:
                sh._run(viewer.start())
                yield sh
                if failed(item):
                    sync_evidence(item, stagehand_config, sh, traffic.calls)
            finally:
                sh._run(viewer.finish())
                sh.close()
    finally:
        if context is not None:
            context.close()
