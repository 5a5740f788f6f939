"""The sync API: :class:`Stagehand` for sync Playwright code (scripts, notebooks, pytest-playwright).

::

    from playwright.sync_api import sync_playwright
    from stagehand_py.sync_api import Stagehand

    with sync_playwright() as p:
        page = p.chromium.launch().new_page()
        page.goto("https://example.com")
        print(Stagehand(page).snapshot().tree)

    with Stagehand.launch() as stagehand:          # or let stagehand_py start Chromium
        stagehand.page.goto("https://example.com")

Every method forwards to the async :class:`stagehand_py.Stagehand`, which runs on the loop
Playwright's sync API already drives (see :mod:`stagehand_py._sync_bridge`): the two APIs
share one implementation, return the same values and raise the same errors.

Like sync Playwright itself, this cannot be used while an asyncio loop runs in the same
thread (inside ``async def`` code use the async API), and a Stagehand belongs to the thread
that made its page.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import (
    AsyncGenerator,
    Awaitable,
    Callable,
    Iterator,
    Sequence,
)
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Unpack, cast, overload

from pydantic import BaseModel

from ._cache import ElementIdentity
from ._errors import ConfigurationError, InvalidArgumentError, PageClosedError
from ._logging import logger
from ._operations._extract_report import ExtractResult
from ._operations.expect import Expectation
from ._stagehand import DOWNLOAD_WAIT, SNAPSHOT_TIMEOUT, LLMOptions, ModelSpec, StagehandOptions
from ._stagehand import Stagehand as AsyncStagehand
from ._sync_bridge import async_view, in_playwright_greenlet, run_sync, sync_view
from ._types import Action, ActResult, BlockedRequest, SavedDownload, Variables
from .browser._options import BrowserOptions
from .browser._recording import TraceMode
from .browser._tabs import DownloadFailure
from .llm import Metrics, ModelLoad
from .snapshot._model import Snapshot

if TYPE_CHECKING:
    from pathlib import Path

    from playwright.sync_api import Page
    from playwright.sync_api import Page as SyncPage
    from playwright.sync_api import Playwright as SyncPlaywright

    from .agent import Agent as AsyncAgent
    from .agent import AgentConfig, AgentEvent, AgentMode, AgentOptions, AgentResult, EvaluateResult

__all__ = ["Agent", "Stagehand"]

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


class Stagehand:
    """Drive one sync Playwright page with natural language: the sync twin of
    :class:`stagehand_py.Stagehand`, with the same methods, options, results and errors.

    - ``Stagehand(page)`` wraps your sync Playwright ``Page`` (pytest-playwright's ``page``
      fixture too); :meth:`close` leaves your page and browser alone.
    - ``Stagehand.launch()`` starts sync Playwright and a local headless Chromium, both ended
      by :meth:`close`.
    - ``Stagehand.connect("http://127.0.0.1:9222")`` attaches to a running browser.

    Use it as a context manager to close it automatically.
    """

    def __init__(
        self,
        page: SyncPage,
        *,
        model: ModelSpec | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        self_heal: bool = True,
        token_budget: int | None = None,
        dom_settle_timeout: float = 5.0,
        llm_options: LLMOptions | None = None,
        follow_new_tabs: bool = True,
        downloads_dir: str | os.PathLike[str] | None = None,
        allowed_domains: Sequence[str] | None = None,
        trace: TraceMode = "off",
        trace_path: str | os.PathLike[str] | None = None,
        allow_secrets_in_trace: Sequence[str] = (),
        _core: AsyncStagehand | None = None,
        _playwright: SyncPlaywright | None = None,
    ) -> None:
        """Wrap a sync Playwright ``Page``; the options are those of :class:`stagehand_py.Stagehand`.
        With ``allowed_domains`` the guard is in place when the constructor returns."""
        from playwright.sync_api import Page as SyncPageClass

        if not isinstance(page, SyncPageClass):
            raise InvalidArgumentError(
                f"stagehand_py.sync_api.Stagehand(page) needs a sync Playwright Page, got {type(page).__name__}. "
                "For an async Page use stagehand_py.Stagehand; to start a browser use Stagehand.launch()."
            )
        self._page = page
        self._playwright = _playwright  # a sync Playwright we started, stopped by close()
        if _core is None:
            view = async_view(page)

            async def make() -> AsyncStagehand:  # built on Playwright's loop, where it will run
                core = AsyncStagehand(
                    view,
                    model=model,
                    api_key=api_key,
                    base_url=base_url,
                    cache_dir=cache_dir,
                    self_heal=self_heal,
                    token_budget=token_budget,
                    dom_settle_timeout=dom_settle_timeout,
                    llm_options=llm_options,
                    follow_new_tabs=follow_new_tabs,
                    downloads_dir=downloads_dir,
                    allowed_domains=allowed_domains,
                    trace=trace,
                    trace_path=trace_path,
                    allow_secrets_in_trace=allow_secrets_in_trace,
                )
                try:
                    await core.__aenter__()  # the allowed_domains guard, before the caller's next line
                except BaseException:
                    await core.close()
                    raise
                return core

            _core = run_sync(page, make())
        self._core = _core

    def _run(self, coro: Awaitable[T]) -> T:
        return run_sync(self._page, coro)

    # --- lifecycle -----------------------------------------------------------------------

    @classmethod
    def launch(
        cls,
        *,
        headless: bool = True,
        executable_path: str | None = None,
        args: Sequence[str] = (),
        viewport: dict[str, int] | None = None,
        browser_options: BrowserOptions | None = None,
        **options: Unpack[StagehandOptions],
    ) -> Stagehand:
        """Start sync Playwright and a local Chromium; see :meth:`stagehand_py.Stagehand.launch`."""
        playwright = _start_sync_playwright("Stagehand.launch()")
        try:
            core = run_sync(
                playwright,
                AsyncStagehand.launch(
                    headless=headless,
                    executable_path=executable_path,
                    args=args,
                    viewport=viewport,
                    browser_options=browser_options,
                    _playwright=async_view(playwright),
                    **options,
                ),
            )
            return cls(sync_view(core.page), _core=core, _playwright=playwright)
        except BaseException:
            playwright.stop()
            raise

    @classmethod
    def connect(
        cls,
        cdp_url: str | None = None,
        *,
        ws_endpoint: str | None = None,
        headers: dict[str, str] | None = None,
        browser_options: BrowserOptions | None = None,
        **options: Unpack[StagehandOptions],
    ) -> Stagehand:
        """Attach to a browser over CDP or to a Playwright server; see :meth:`stagehand_py.Stagehand.connect`."""
        playwright = _start_sync_playwright("Stagehand.connect()")
        try:
            core = run_sync(playwright, AsyncStagehand.connect(
                cdp_url, ws_endpoint=ws_endpoint, headers=headers, browser_options=browser_options,
                _playwright=async_view(playwright), **options))
            return cls(sync_view(core.page), _core=core, _playwright=playwright)
        except BaseException:
            playwright.stop()
            raise

    def close(self) -> None:
        """Release what this Stagehand opened (and the browser and Playwright it started)."""
        try:
            self._run(self._core.close())
        except PageClosedError as exc:  # Playwright already stopped: nothing left to release there
            logger.debug("sync Stagehand closed after its Playwright stopped: %s", exc)
        finally:
            playwright, self._playwright = self._playwright, None
            if playwright is not None:
                playwright.stop()

    def __enter__(self) -> Stagehand:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # --- state ---------------------------------------------------------------------------

    @property
    def page(self) -> SyncPage:
        """The sync Playwright ``Page`` this Stagehand drives (it follows new tabs)."""
        page: SyncPage = sync_view(self._core.page)
        return page

    @property
    def pages(self) -> list[Page]:
        """The open tabs; see :attr:`stagehand_py.Stagehand.pages`."""
        return [sync_view(page) for page in self._core.pages]

    def switch_to_page(self, page: Page | int) -> None:
        """Drive another tracked tab; see :meth:`stagehand_py.Stagehand.switch_to_page`."""
        self._run(self._core.switch_to_page(page if isinstance(page, int) else async_view(page)))

    def new_page(self, url: str | None = None) -> Page:
        """Open a tab and drive it; see :meth:`stagehand_py.Stagehand.new_page`."""
        created: Page = sync_view(self._run(self._core.new_page(url)))
        return created

    def close_page(self, page: Page | int | None = None) -> None:
        """Close a tracked tab; see :meth:`stagehand_py.Stagehand.close_page`."""
        self._run(self._core.close_page(page if page is None or isinstance(page, int) else async_view(page)))

    @property
    def downloads(self) -> list[SavedDownload]:
        """Files downloaded so far; see :attr:`stagehand_py.Stagehand.downloads`."""
        return self._core.downloads

    @property
    def failed_downloads(self) -> list[DownloadFailure]:
        """Downloads that could not be saved; see :attr:`stagehand_py.Stagehand.failed_downloads`."""
        return self._core.failed_downloads

    def finish_downloads(self, timeout: float = DOWNLOAD_WAIT) -> list[SavedDownload]:
        """Wait for the downloads still saving; see :meth:`stagehand_py.Stagehand.finish_downloads`."""
        return self._run(self._core.finish_downloads(timeout))

    def save_storage_state(self, path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """Cookies and local storage, saved to ``path`` if given; see :meth:`stagehand_py.Stagehand.save_storage_state`."""
        return self._run(self._core.save_storage_state(path))

    def model_ready(self) -> ModelLoad:
        """Wait until the model can answer; see :meth:`stagehand_py.Stagehand.model_ready`."""
        return self._run(self._core.model_ready())

    @property
    def trace_path(self) -> Path | None:
        """Where ``trace=`` wrote the trace on :meth:`close`; see :attr:`stagehand_py.Stagehand.trace_path`."""
        return self._core.trace_path

    @property
    def blocked_requests(self) -> list[BlockedRequest]:
        """What ``allowed_domains`` refused; see :attr:`stagehand_py.Stagehand.blocked_requests`."""
        return self._core.blocked_requests

    @property
    def metrics(self) -> Metrics:
        """Model usage of this Stagehand; see :attr:`stagehand_py.Stagehand.metrics`."""
        return self._core.metrics

    # --- verbs ---------------------------------------------------------------------------

    def snapshot(self, *, selector: str | None = None, confidence: bool = False,
                 timeout: float | None = SNAPSHOT_TIMEOUT) -> Snapshot:
        """Capture the page; see :meth:`stagehand_py.Stagehand.snapshot`."""
        return self._run(self._core.snapshot(selector=selector, confidence=confidence, timeout=timeout))

    def observe(
        self,
        instruction: str | None = None,
        *,
        variables: Variables | None = None,
        selector: str | None = None,
        ignore_selectors: Sequence[str] = (),
        vision: Literal["auto"] | bool = "auto",
        timeout: float | None = None,
    ) -> list[Action]:
        """Find elements and their actions; see :meth:`stagehand_py.Stagehand.observe`."""
        return self._run(
            self._core.observe(
                instruction,
                variables=variables,
                selector=selector,
                ignore_selectors=ignore_selectors,
                vision=vision,
                timeout=timeout,
            )
        )

    def act(
        self,
        action: Action | str,
        *,
        variables: Variables | None = None,
        vision: Literal["auto"] | bool = "auto",
        timeout: float | None = None,
        element: ElementIdentity | None = None,
    ) -> ActResult:
        """Run an Action, or plan one from an instruction; see :meth:`stagehand_py.Stagehand.act`."""
        return self._run(self._core.act(action, variables=variables, vision=vision, timeout=timeout, element=element))

    def expect(self, claim: str, *, screenshot: bool = False, raise_on_failure: bool | None = None,
               timeout: float | None = None) -> Expectation:
        """Check a claim about the page in words; see :meth:`stagehand_py.Stagehand.expect`."""
        return self._run(self._core.expect(claim, screenshot=screenshot, raise_on_failure=raise_on_failure,
                                           timeout=timeout))

    @overload
    def extract(
        self,
        instruction: str | None = ...,
        *,
        schema: type[M],
        selector: str | None = ...,
        screenshot: bool = ...,
        timeout: float | None = ...,
        report: Literal[False] = ...,
    ) -> M: ...

    @overload
    def extract(
        self,
        instruction: str | None = ...,
        *,
        schema: type[M],
        selector: str | None = ...,
        screenshot: bool = ...,
        timeout: float | None = ...,
        report: Literal[True],
    ) -> ExtractResult[M]: ...

    @overload
    def extract(
        self,
        instruction: str | None = ...,
        schema: dict[str, Any] | None = ...,
        *,
        selector: str | None = ...,
        screenshot: bool = ...,
        timeout: float | None = ...,
        report: bool = ...,
    ) -> Any: ...

    def extract(
        self,
        instruction: str | None = None,
        schema: type[BaseModel] | dict[str, Any] | None = None,
        *,
        selector: str | None = None,
        screenshot: bool = False,
        timeout: float | None = None,
        report: bool = False,
    ) -> Any:
        """Extract data from the page; see :meth:`stagehand_py.Stagehand.extract`."""
        return self._run(self._core.extract(instruction, cast(Any, schema), selector=selector, screenshot=screenshot,
                                            timeout=timeout, report=cast(Any, report)))

    # --- agent and judge -------------------------------------------------------------------

    def agent(self, config: AgentConfig | None = None, /, **options: Unpack[AgentOptions]) -> Agent:
        """A tool-using agent on this page; see :meth:`stagehand_py.Stagehand.agent`.

        Plain-function ``tools``, ``callbacks`` and ``on_safety_check`` run where sync
        Playwright calls work (one of Playwright's callback greenlets); a tool parameter named
        ``stagehand`` receives this sync Stagehand.
        """
        from .agent import AgentConfig, Tool

        if config is not None and not isinstance(config, AgentConfig):
            raise InvalidArgumentError(f"agent() takes an AgentConfig (or keyword options), not {type(config).__name__}.")
        settings = (config or AgentConfig()).replace(options)
        check = settings.on_safety_check
        settings = dataclasses.replace(
            settings,
            tools=[t if isinstance(t, Tool) or not callable(t) else self._for_core(t) for t in settings.tools],
            on_safety_check=self._for_core(check) if check is not None else None,
        )
        core = self._run(self._make_agent(settings))
        return Agent(self, core)

    async def _make_agent(self, settings: AgentConfig) -> AsyncAgent:
        return self._core.agent(settings)

    def _for_core(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` made callable from the async core: in a Playwright greenlet, this facade for the core."""
        return in_playwright_greenlet(fn, swap={id(self._core): self})

    def evaluate(
        self, question: str, *, screenshot: bool = True, model: ModelSpec | None = None, timeout: float | None = None
    ) -> EvaluateResult:
        """Ask a judge model a yes/no question about the page; see :meth:`stagehand_py.Stagehand.evaluate`."""
        return self._run(self._core.evaluate(question, screenshot=screenshot, model=model, timeout=timeout))

    def __repr__(self) -> str:
        return f"<stagehand_py.sync_api.Stagehand page={self._page.url!r}>"


class Agent:
    """The sync face of :class:`stagehand_py.agent.Agent`; make one with :meth:`Stagehand.agent`."""

    def __init__(self, stagehand: Stagehand, core: AsyncAgent) -> None:
        self._stagehand = stagehand
        self._core = core

    @property
    def mode(self) -> AgentMode:
        return self._core.mode

    def execute(
        self,
        instruction: str,
        *,
        max_steps: int = 20,
        variables: Variables | None = None,
        output: type[BaseModel] | dict[str, Any] | None = None,
        timeout: float | None = None,
        callbacks: Callable[[AgentEvent], Any] | Sequence[Callable[[AgentEvent], Any]] | None = None,
        checkpoint_path: str | Path | None = None,
        replay: bool | None = None,
    ) -> AgentResult:
        """Run the task; see :meth:`stagehand_py.agent.Agent.execute`."""
        return self._stagehand._run(
            self._core.execute(
                instruction,
                max_steps=max_steps,
                variables=variables,
                output=output,
                timeout=timeout,
                callbacks=self._callbacks(callbacks),
                checkpoint_path=checkpoint_path,
                replay=replay,
            )
        )

    def stream(self, instruction: str, **options: Any) -> Iterator[AgentEvent]:
        """Run the task and yield its events; see :meth:`stagehand_py.agent.Agent.stream`."""
        if "callbacks" in options:
            options["callbacks"] = self._callbacks(options["callbacks"])
        events = cast(AsyncGenerator["AgentEvent", None], self._core.stream(instruction, **options))
        try:
            while True:
                try:
                    yield self._stagehand._run(events.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            self._stagehand._run(events.aclose())

    def _callbacks(self, callbacks: Any) -> Any:
        if callbacks is None:
            return None
        listed = [callbacks] if callable(callbacks) else list(callbacks)
        return [self._stagehand._for_core(cb) for cb in listed]


def _start_sync_playwright(what: str) -> SyncPlaywright:
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    try:
        return sync_playwright().start()
    except PlaywrightError as exc:
        if "asyncio loop" not in exc.message:
            raise
        raise ConfigurationError(
            f"sync {what} cannot start Playwright here: an asyncio loop is running in this thread "
            "(async code, or another sync Playwright that is still open). In async code use "
            "`await stagehand_py.Stagehand.launch()`; with a sync Playwright already running, wrap its page: "
            "`stagehand_py.sync_api.Stagehand(page)`."
        ) from exc
