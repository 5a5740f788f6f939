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
- ``--stagehand-artifacts``: where failure evidence goes (default ``stagehand-artifacts``).

On a failed test the plugin saves the page's snapshot outline, the model requests and
responses (secret values redacted) and a screenshot under the artifacts folder, and adds the
outline and the list of files to the test's report.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import shutil
from collections.abc import AsyncIterator, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .testing import CapturedCall

__all__ = ["StagehandTestConfig"]

_RECORD_MODES = ("none", "once", "all", "live")
_MARKER_KEYS = frozenset({"model", "variables", "base_url", "choice_mode"})
#: The model named when the environment configures none: a cassette recorded with it still replays.
_DEFAULT_MODEL = "openai/gpt-4.1-mini"
_ARTIFACTS_DEFAULT = "stagehand-artifacts"
#: The report stash key under which the call-phase report of a test is kept.
_CALL_REPORT = pytest.StashKey[pytest.TestReport]()
_TRAFFIC = pytest.StashKey["_ModelTraffic"]()
_OUTLINE_REPORT_CHARS = 4000


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
        "--stagehand-artifacts", dest="stagehand_artifacts", default=_ARTIFACTS_DEFAULT, metavar="DIR",
        help=f"where a failed test's outline, model calls and screenshot go (default: {_ARTIFACTS_DEFAULT}).",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "stagehand(model=None, variables=None, base_url=None, choice_mode=None): per-test model (a string, "
        "an LLMClient, a model object or a test double such as ScriptedLLM), its server and choice mode, "
        "and the variables for the stagehand / stagehand_sync fixtures.",
    )


@dataclass(frozen=True)
class StagehandTestConfig:
    """What the ``stagehand`` fixtures were configured with for one test."""

    model: Any
    variables: dict[str, Any] = field(default_factory=dict)
    base_url: str | None = None
    choice_mode: bool | None = None
    record: str = "none"
    cache_dir: Path | None = None
    cassette_path: Path | None = None
    artifacts_dir: Path = Path(_ARTIFACTS_DEFAULT)

    @property
    def uses_real_model(self) -> bool:
        """Anything but a test double: it can run live, record a cassette or replay one."""
        return not is_test_double(self.model)

    @property
    def model_kind(self) -> str:
        """``test double``, ``embedded``, ``hosted`` or ``model object``: what recording means for it."""
        from .llm import LLMClient

        if is_test_double(self.model):
            return "test double"
        name = self.model if isinstance(self.model, str) else None
        if isinstance(self.model, LLMClient):
            inner = self.model._model
            return "embedded" if getattr(inner, "provider", "") == "local" else (
                "hosted" if getattr(inner, "records_over_http", False) else "model object")
        if name is not None:
            return "embedded" if name.startswith("local/") else "hosted"
        return "embedded" if getattr(self.model, "provider", "") == "local" else "model object"

    @property
    def secrets(self) -> list[str]:
        """Every variable's value (a TOTP seed and its codes too): never written down."""
        from ._secrets import VariableSet  # imported late: the plugin loads with every pytest run

        return VariableSet.of(self.variables).secret_values()


def is_test_double(model: Any) -> bool:
    """True for ``FunctionLLM``/``ScriptedLLM``, users' doubles (``is_test_double = True``) and an
    ``LLMClient`` around one; every other model is real."""
    from .llm import LLMClient

    inner = model._model if isinstance(model, LLMClient) else model
    return bool(getattr(inner, "is_test_double", False))


def _default_model(environ: Any = None) -> tuple[str, str | None]:
    """The model (and its server) the library's one rule picks, else :data:`_DEFAULT_MODEL`."""
    from .llm._policy import default_model

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
    from ._inputs import check_inputs  # imported late: the plugin loads with every pytest run

    check_inputs("@pytest.mark.stagehand", variables=kwargs.get("variables"))
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
        artifacts_dir=artifacts / _safe_name(request.node.nodeid.replace("::", "__").replace("/", "_")),
    )


@pytest.fixture
def stagehand_config(request: pytest.FixtureRequest) -> StagehandTestConfig:
    """The resolved model, variables, record mode, cache and artifact paths for this test."""
    return _resolve_config(request)


# --- model traffic: cassettes, the kill switch, capture ------------------------------------------


class _ModelTraffic:
    """For one test: cassette or kill switch, and every model call captured for evidence."""

    def __init__(self, cfg: StagehandTestConfig) -> None:
        from .testing import block_model_requests, capture_requests, use_cassette

        self.cfg = cfg
        self.calls: list[CapturedCall] = []
        self.cassette: Any = None
        self.cassette_used = False
        self._stack: list[Any] = []
        assert cfg.cassette_path is not None
        exists = cfg.cassette_path.exists()
        live = cfg.uses_real_model and cfg.record == "live"
        recording = cfg.uses_real_model and (cfg.record == "all" or (cfg.record == "once" and not exists))
        self.recording = recording or live
        #: Answers come from the cassette: the real model need not be available at all.
        self.replaying = cfg.uses_real_model and exists and not self.recording
        managers: list[Any] = [capture_requests()]
        if cfg.uses_real_model and not live and (recording or exists):
            mode = "none" if cfg.record == "none" else cfg.record
            managers.append(use_cassette(cfg.cassette_path, mode=mode, secrets=cfg.secrets))  # type: ignore[arg-type]
            self.cassette_used = True
        if not self.recording:
            managers.append(block_model_requests())
        self._managers = managers

    def __enter__(self) -> _ModelTraffic:
        for manager in self._managers:
            value = manager.__enter__()
            if isinstance(value, list):
                self.calls = value
            elif value is not None and hasattr(value, "recorded_with"):
                self.cassette = value
            self._stack.append(manager)
        return self

    def __exit__(self, *exc: Any) -> None:
        while self._stack:
            self._stack.pop().__exit__(None, None, None)

    def how_to_record(self) -> str:
        """What to do about a blocked or unmatched request, for this test's kind of model."""
        path = self.cfg.cassette_path
        if not self.cfg.uses_real_model:
            return ""
        kind = self.cfg.model_kind
        recipe = {
            "hosted": "Record it once with a real key, e.g. `OPENAI_API_KEY=... pytest {nodeid} --stagehand-record once` "
                      "(or ANTHROPIC_API_KEY for anthropic/ models)",
            "embedded": "Record it once with the embedded model, no key needed: `pytest {nodeid} --stagehand-record "
                        "once` (run `bash scripts/setup.sh` first if the model is not installed)",
            "model object": "Record it once with your model object: `pytest {nodeid} --stagehand-record once` "
                            "(it runs the model live and stores its answers)",
        }[kind]
        return (
            f"No model answer is available for this test: the cassette {path} "
            f"{'has no matching recording' if path is not None and path.exists() else 'does not exist'} and "
            f"--stagehand-record is {self.cfg.record!r}, so real model requests are blocked. {recipe}, and commit "
            "the cassette; `--stagehand-record all` re-records a cassette after the page or the prompt changed, and "
            "`--stagehand-record live` runs the model without any cassette. Or give the test a scripted model with "
            f"@pytest.mark.stagehand(model=ScriptedLLM([...])). (model: {self.cfg.model!r}, a {kind} model)"
        )


class _ReplayOnlyModel:
    """Stands in for a model that is not available here while its cassette answers."""

    def __init__(self, name: str) -> None:
        self.model_name = name

    async def request(self, request: Any) -> Any:
        from ._errors import ModelRequestBlockedError

        raise ModelRequestBlockedError(
            f"model {self.model_name!r} is not available here and its cassette has no answer for this "
            f"{request.purpose!r} request."
        )


def _client_for(cfg: StagehandTestConfig, traffic: _ModelTraffic) -> Any:
    """The model handed to ``Stagehand``: an ``LLMClient`` built from the test's configuration."""
    from .llm import LLMClient

    model = cfg.model
    cassette = traffic.cassette
    if traffic.replaying and cassette is not None and cassette.at_model_boundary:
        # Recorded at the model boundary: ask the way the recording did; no model is needed.
        recorded = cassette.recorded_with
        return LLMClient(_ReplayOnlyModel(str(recorded.get("model", model))), secrets=cfg.secrets,
                         choice_mode=bool(recorded.get("choice_mode", cfg.choice_mode or False)))
    client = _real_client(cfg, traffic)
    if cassette is not None and not traffic.replaying:
        cassette.recorded_with = {"model": str(client._model_label), "choice_mode": client.choice_mode,
                                  "token_budget": _token_budget(cfg)}
    return client


def _token_budget(cfg: StagehandTestConfig) -> int | None:
    from .llm._policy import LOCAL_TOKEN_BUDGET

    return LOCAL_TOKEN_BUDGET if cfg.model_kind == "embedded" else None


def _real_client(cfg: StagehandTestConfig, traffic: _ModelTraffic) -> Any:
    from ._errors import ConfigurationError
    from .llm import LLMClient

    model = cfg.model
    if isinstance(model, LLMClient):
        return model
    if not isinstance(model, str):
        # A test double or a user's model object (choice mode on request).
        if cfg.choice_mode is None:
            return LLMClient(model, secrets=cfg.secrets)
        return LLMClient(model, secrets=cfg.secrets, choice_mode=cfg.choice_mode)
    options: dict[str, Any] = {"secrets": cfg.secrets}
    if cfg.base_url is not None:
        options["base_url"] = cfg.base_url
    if cfg.choice_mode is not None:
        options["choice_mode"] = cfg.choice_mode
    try:
        return LLMClient(model, **options)
    except ConfigurationError as exc:
        if traffic.recording:
            raise
        if "no API key" in str(exc):
            # Replaying (or blocked): the key is never sent anywhere, the SDK only insists on one.
            return LLMClient(model, api_key="stagehand-replay-no-key", **options)
        if model.startswith("local/"):
            # The embedded model is not installed here: its cassette answers at the model boundary.
            options.pop("base_url", None)
            return LLMClient(_ReplayOnlyModel(model), **{"choice_mode": True, **options})
        raise


def _stagehand_kwargs(cls: Any, cfg: StagehandTestConfig, model: Any, traffic: _ModelTraffic) -> dict[str, Any]:
    """The constructor options this ``Stagehand`` class accepts, from the test's configuration."""
    budget = _token_budget(cfg)
    if traffic.replaying and traffic.cassette is not None:
        budget = traffic.cassette.recorded_with.get("token_budget", budget)  # prompts as when recorded
    offered = {"model": model, "variables": cfg.variables or None, "cache_dir": cfg.cache_dir,
               # A CPU model reads a few dozen tokens a second: keep its prompts small.
               "token_budget": budget}
    params = inspect.signature(cls.__init__).parameters
    return {k: v for k, v in offered.items() if k in params and v is not None}


# --- failure evidence ------------------------------------------------------------------------------


def _calls_record(calls: list[CapturedCall], secrets: list[str]) -> list[dict[str, Any]]:
    from .llm import Redactor
    from .llm._inference_log import request_record

    redactor = Redactor(secrets)
    out: list[dict[str, Any]] = []
    for call in calls:
        entry: dict[str, Any] = {"model": call.model, "request": request_record(call.request), "response": None, "error": None}
        if call.response is not None:
            r = call.response
            entry["response"] = {"text": r.text, "output": r.output, "refusal": r.refusal, "usage": r.usage.model_dump()}
        if call.error is not None:
            entry["error"] = {"type": type(call.error).__name__, "message": str(call.error)}
        out.append(redactor.data(entry))
    return out


def _write_evidence(
    item: pytest.Item, cfg: StagehandTestConfig, *, outline: str | None, screenshot: bytes | None,
    calls: list[CapturedCall], problems: list[str],
) -> None:
    from .llm import Redactor

    redactor = Redactor(cfg.secrets)
    folder = cfg.artifacts_dir
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    files: list[str] = []
    if outline is not None:
        outline = redactor.text(outline)
        (folder / "outline.txt").write_text(outline, encoding="utf-8")
        files.append("outline.txt")
    if screenshot is not None:
        (folder / "screenshot.png").write_bytes(screenshot)
        files.append("screenshot.png")
    records = _calls_record(calls, cfg.secrets)
    (folder / "model_calls.json").write_text(json.dumps(records, indent=2, default=str, ensure_ascii=False), encoding="utf-8")
    files.append("model_calls.json")
    report = item.stash.get(_CALL_REPORT, None)
    if report is None:
        return
    lines = [f"folder: {folder}", *(f"  {name}" for name in files), f"model calls: {len(records)}"]
    lines += [f"not captured: {p}" for p in problems]
    report.sections.append(("stagehand artifacts", "\n".join(lines)))
    if outline:
        shown = outline if len(outline) <= _OUTLINE_REPORT_CHARS else outline[:_OUTLINE_REPORT_CHARS] + "\n... (truncated; full outline in outline.txt)"
        report.sections.append(("stagehand snapshot outline", shown))
    if records:
        last = records[-1]
        report.sections.append(("stagehand last model call", json.dumps(
            {"purpose": last["request"]["purpose"], "response": last["response"], "error": last["error"]},
            indent=2, default=str, ensure_ascii=False)[:_OUTLINE_REPORT_CHARS]))


def _failed(item: pytest.Item) -> bool:
    report = item.stash.get(_CALL_REPORT, None)
    return report is not None and report.failed


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.when == "call":
        item.stash[_CALL_REPORT] = report
    return report


def _blocked_in_chain(exc: BaseException) -> BaseException | None:
    from ._errors import CassetteError, ModelRequestBlockedError

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
        from ._errors import ModelRequestBlockedError

        hint = traffic.how_to_record().replace("{nodeid}", item.nodeid)
        if not hint:
            raise
        raise ModelRequestBlockedError(f"{hint} (underlying error: {type(exc).__name__}: {exc})") from exc


# --- browsers --------------------------------------------------------------------------------------


def _uses_plugin_page(config: pytest.Config, name: str) -> bool:
    return bool(config.pluginmanager.has_plugin(name))


async def _async_evidence(item: pytest.Item, cfg: StagehandTestConfig, sh: Any, calls: list[CapturedCall]) -> None:
    outline = screenshot = None
    problems: list[str] = []
    try:
        outline = (await asyncio.wait_for(sh.snapshot(), 30)).tree
    except Exception as exc:  # evidence is best effort: the test already failed for its own reason
        problems.append(f"outline ({type(exc).__name__}: {exc})")
    try:
        screenshot = await sh.page.screenshot(full_page=True, timeout=15_000)
    except Exception as exc:
        problems.append(f"screenshot ({type(exc).__name__}: {exc})")
    _write_evidence(item, cfg, outline=outline, screenshot=screenshot, calls=calls, problems=problems)


def _sync_evidence(item: pytest.Item, cfg: StagehandTestConfig, sh: Any, calls: list[CapturedCall]) -> None:
    outline = screenshot = None
    problems: list[str] = []
    try:
        outline = sh.snapshot().tree
    except Exception as exc:
        problems.append(f"outline ({type(exc).__name__}: {exc})")
    try:
        screenshot = sh.page.screenshot(full_page=True, timeout=15_000)
    except Exception as exc:
        problems.append(f"screenshot ({type(exc).__name__}: {exc})")
    _write_evidence(item, cfg, outline=outline, screenshot=screenshot, calls=calls, problems=problems)


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
        from .browser._session import launch_browser

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
        from ._stagehand import Stagehand

        item = request.node
        with _ModelTraffic(stagehand_config) as traffic:
            item.stash[_TRAFFIC] = traffic
            model = _client_for(stagehand_config, traffic)
            sh = Stagehand(_stagehand_async_page, **_stagehand_kwargs(Stagehand, stagehand_config, model, traffic))
            try:
                yield sh
                if _failed(item):
                    await _async_evidence(item, stagehand_config, sh, traffic.calls)
            finally:
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


@pytest.fixture(scope="session")
def stagehand_sync_browser() -> Iterator[Any]:
    """A headless Chromium for the whole session (sync Playwright) for ``stagehand_sync``."""
    from playwright.sync_api import sync_playwright

    from .browser._chromium import DEFAULT_CHROMIUM_ARGS, find_chromium

    playwright = sync_playwright().start()
    try:
        try:
            bundled = playwright.chromium.executable_path
        except Exception:  # no Playwright browser installed: the system one is fine
            bundled = None
        browser = playwright.chromium.launch(
            executable_path=find_chromium(None, playwright_path=bundled), headless=True, args=list(DEFAULT_CHROMIUM_ARGS)
        )
        yield browser
        browser.close()
    finally:
        playwright.stop()


@pytest.fixture
def stagehand_sync(request: pytest.FixtureRequest, stagehand_config: StagehandTestConfig) -> Iterator[Any]:
    """A sync ``Stagehand`` (``stagehand_py.sync_api``) on a fresh page: pytest-playwright's
    ``page`` when that plugin is active, else a new context in the plugin's own Chromium."""
    from .sync_api import Stagehand

    context = None
    if _uses_plugin_page(request.config, "playwright"):
        page = request.getfixturevalue("page")
    else:
        browser = request.getfixturevalue("stagehand_sync_browser")
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
    item = request.node
    try:
        with _ModelTraffic(stagehand_config) as traffic:
            item.stash[_TRAFFIC] = traffic
            sh = Stagehand(page, **_stagehand_kwargs(Stagehand, stagehand_config, _client_for(stagehand_config, traffic),
                                                 traffic))
            try:
                yield sh
                if _failed(item):
                    _sync_evidence(item, stagehand_config, sh, traffic.calls)
            finally:
                sh.close()
    finally:
        if context is not None:
            context.close()
