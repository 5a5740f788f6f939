"""The async ``Stagehand``: browser lifecycle and the public verbs."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypedDict, TypeVar, Unpack, overload

from playwright.async_api import Page
from pydantic import BaseModel

from ._actions import action_title
from ._cache import ActionCache, ElementIdentity
from ._errors import ExpectationError, InvalidArgumentError, PageClosedError, StagehandTimeoutError
from ._inputs import check_flag, check_instruction, deadline_of, required_instruction
from ._model_clients import LLMOptions, ModelClients, ModelSpec
from ._operations import act as _act
from ._operations import expect as _expect
from ._operations import extract as _extract
from ._operations import observe as _observe
from ._operations._extract_report import ExtractResult
from ._operations.expect import Expectation
from ._secrets import VariableSet
from ._session import SNAPSHOT_TIMEOUT, OperationContext, PageSession, PageSessions
from ._types import Action, ActResult, BlockedRequest, SavedDownload, Variables
from ._viewer import verb_step
from .browser._guard import check_patterns
from .browser._options import BrowserOptions, with_allowed_domains
from .browser._recording import TraceMode
from .browser._session import BrowserSession, connect_browser, connect_playwright_server, launch_browser
from .browser._storage import write_storage_state
from .browser._tabs import DownloadFailure, Tabs
from .llm import LLMClient, Metrics, ModelLoad, Usage
from .llm._policy import token_budget_for
from .snapshot._model import Snapshot
from .tracing._spans import traced_operation

if TYPE_CHECKING:
    from .agent import Agent, AgentConfig, AgentOptions, EvaluateResult

__all__ = ["DOWNLOAD_WAIT", "SNAPSHOT_TIMEOUT", "LLMOptions", "ModelSpec", "Stagehand", "StagehandOptions"]

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

#: Seconds act() waits at most for the downloads it started to be saved.
DOWNLOAD_WAIT = 300.0


class StagehandOptions(TypedDict, total=False):
    """Keyword options of ``Stagehand(...)``, also accepted by ``launch()`` and ``connect()``."""

    #: ``"provider/model"`` string, a model object (e.g. ``stagehand_py.testing.FunctionLLM``)
    #: or an ``LLMClient``. Default: :func:`stagehand_py.llm.default_model` (a provider key, an
    #: OpenAI-compatible server, else the embedded model when installed).
    model: ModelSpec | None
    api_key: str | None
    base_url: str | None
    #: Folder of the action cache (act/observe results replayed with no model call).
    cache_dir: str | os.PathLike[str] | None
    #: Re-locate an element whose selector broke, with one model call, and retry once.
    self_heal: bool
    #: Maximum estimated prompt tokens of any one model call (default 16000; 6000 for a local model
    #: chosen by default).
    token_budget: int | None
    #: Seconds to wait at most for the page to settle before reading it and after acting.
    dom_settle_timeout: float
    #: More ``LLMClient`` options (``max_reasks``, ``timeout``, ``usage_limits``, ``temperature``...).
    llm_options: LLMOptions | None
    #: Drive a tab the driven tab opens (popup, ``target=_blank``) as soon as it opens.
    follow_new_tabs: bool
    #: Folder downloads are saved in (default: a new temporary folder, made on the first download).
    downloads_dir: str | os.PathLike[str] | None
    #: Glob patterns of the hosts the browser context may reach while this Stagehand is open
    #: (``"example.com"``, ``"*.example.com"``, ``"127.0.0.1:8080"``); see :class:`Stagehand`.
    allowed_domains: Sequence[str] | None
    #: A Playwright trace of the context, values scrubbed, written on close to ``trace_path``.
    trace: TraceMode
    trace_path: str | os.PathLike[str] | None
    #: Variables whose values may be typed while a Playwright trace *you* started records.
    allow_secrets_in_trace: Sequence[str]


class Stagehand:
    """Drive one Playwright page with natural language.

    Three ways to get one:

    - ``Stagehand(page=page)`` wraps your own async Playwright ``Page`` (any launch, any
      context); :meth:`close` then leaves your page and browser alone.
    - ``await Stagehand.launch()`` starts a local headless Chromium that :meth:`close` ends.
    - ``await Stagehand.connect("http://127.0.0.1:9222")`` attaches to a running browser.

    Use it as an async context manager to close it automatically.

    ``allowed_domains`` holds the whole browser context to those hosts until :meth:`close`, your
    own ``page.goto`` included (docs/security.md); ``launch()``/``connect()`` return guarded, and
    ``Stagehand(page, ...)`` is guarded once entered (``async with``) or by its first call.
    """

    #: Marks the class the agent hands to tools that ask for the browser (see
    #: :func:`stagehand_py.agent.tool_from_function`), without the agent importing it.
    _is_agent_driver: ClassVar[bool] = True

    def __init__(
        self,
        page: Page,
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
        _session: BrowserSession | None = None,
    ) -> None:
        if page is None or not hasattr(page, "context") or not hasattr(page, "goto"):
            raise InvalidArgumentError(
                f"Stagehand(page=...) needs an async Playwright Page, got {type(page).__name__}. "
                "For a sync Page use stagehand_py.sync_api.Stagehand; to start a browser use `await Stagehand.launch()`."
            )
        self._session = _session or BrowserSession(page=page)
        self._session.guard_with(allowed_domains, redact=lambda text: self._variables_seen.redact(text))
        self._session.trace.configure(trace, trace_path, what="Stagehand")
        self._tabs = Tabs(page, follow=bool(follow_new_tabs), downloads_dir=downloads_dir)
        self._pages = PageSessions(direct=self._session.direct)
        self._closed = False
        if token_budget is not None and (not isinstance(token_budget, int) or token_budget < 1000):
            raise InvalidArgumentError(f"token_budget must be an int of at least 1000 tokens, got {token_budget!r}.")
        if dom_settle_timeout <= 0:
            raise InvalidArgumentError(f"dom_settle_timeout must be a positive number of seconds, got {dom_settle_timeout!r}.")
        self._models = ModelClients(model, {"api_key": api_key, "base_url": base_url, **dict(llm_options or {})})
        self._cache = ActionCache(cache_dir) if cache_dir is not None else None
        self._self_heal = bool(self_heal)
        self._token_budget = token_budget or token_budget_for(self._models.model_name)
        self._dom_settle_timeout = float(dom_settle_timeout)
        # Every variable this Stagehand was given: their values stay hidden in later calls too.
        self._variables_seen = VariableSet.of(None).allowing_in_trace(allow_secrets_in_trace)

    # --- lifecycle -----------------------------------------------------------------------

    @classmethod
    async def launch(
        cls,
        *,
        headless: bool = True,
        executable_path: str | None = None,
        args: Sequence[str] = (),
        viewport: dict[str, int] | None = None,
        browser_options: BrowserOptions | None = None,
        _playwright: Any = None,
        **options: Unpack[StagehandOptions],
    ) -> Stagehand:
        """Start a local Chromium and return a Stagehand on a fresh page in it.

        The executable is ``executable_path``, else ``$STAGEHAND_CHROMIUM_PATH``, else
        Playwright's own Chromium if installed, else the system ``/usr/bin/chromium``.
        ``args`` are added to the flags a headless (root, container) session needs.
        ``browser_options`` sets up the context: a storage state to load and save, a persistent
        profile folder, proxy, user agent, locale, time zone, geolocation, extra headers.
        ``_playwright`` (private: the sync API's hook) is an async Playwright to launch with,
        left running on close.
        """
        browser_options = with_allowed_domains(browser_options, options.pop("allowed_domains", None), viewport=viewport)
        session = await launch_browser(
            headless=headless, executable_path=executable_path, args=args, viewport=viewport, playwright=_playwright,
            options=browser_options,
        )
        return await cls._started(session, options)

    @classmethod
    async def _started(cls, session: BrowserSession, options: StagehandOptions) -> Stagehand:
        try:  # on a failure here the session launch()/connect() opened is closed
            sh = cls(session.page, _session=session, **options)
            await sh._install_helpers()  # before any navigation, so closed shadow roots are recorded
        except BaseException:
            await session.close()
            raise
        return sh

    @classmethod
    async def connect(
        cls,
        cdp_url: str | None = None,
        *,
        ws_endpoint: str | None = None,
        headers: dict[str, str] | None = None,
        browser_options: BrowserOptions | None = None,
        _playwright: Any = None,
        **options: Unpack[StagehandOptions],
    ) -> Stagehand:
        """Attach to a browser that runs elsewhere; give exactly one of:

        - ``cdp_url`` (``"http://127.0.0.1:9222"`` or a ``ws://.../devtools/browser/...`` URL): a
          Chromium's DevTools endpoint, e.g. a hosted browser. Drives its first page; the
          browser keeps running after :meth:`close`.
        - ``ws_endpoint`` (``"ws://host:3000/"``): a Playwright server (``playwright
          run-server``). Opens a fresh context there, set up with ``browser_options``;
          :meth:`close` closes that context. ``headers`` go with the handshake (a service's
          token, ``x-playwright-launch-options``) and are never logged.
        """
        if (cdp_url is None) == (ws_endpoint is None):
            raise InvalidArgumentError(
                "connect() needs exactly one of cdp_url= (a browser's DevTools endpoint, e.g. http://127.0.0.1:9222) "
                "and ws_endpoint= (a Playwright server, e.g. ws://127.0.0.1:3000/)."
            )
        allowed = options.pop("allowed_domains", None)
        allowed = check_patterns(allowed) if allowed is not None else None  # before connecting
        if cdp_url is not None:
            if browser_options is not None or headers is not None:
                raise InvalidArgumentError(
                    "browser_options and headers apply to connect(ws_endpoint=...) only: over CDP the browser's existing "
                    "context is driven as it was set up (allowed_domains= applies to it too)."
                )
            session = await connect_browser(cdp_url, playwright=_playwright, allowed_domains=allowed)
        else:
            assert ws_endpoint is not None
            session = await connect_playwright_server(ws_endpoint, headers=headers, playwright=_playwright,
                                                      options=with_allowed_domains(browser_options, allowed))
        return await cls._started(session, options)

    async def close(self) -> None:
        """Release what this Stagehand opened (CDP sessions, its guard, a browser it launched)."""
        if self._closed:
            return
        self._closed = True
        self._tabs.detach()
        try:
            await self._pages.close()
        finally:
            await self._session.close()  # the guard first, then what the session opened

    async def __aenter__(self) -> Stagehand:
        await self._guarded()
        return self

    async def _guarded(self) -> None:  # the allowed_domains guard, before the first call (once)
        self._check_not_closed()
        await self._session.hold_guard()
        await self._session.trace.start(self._session.page.context)

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._session.trace.failed |= exc is not None
        await self.close()

    @property
    def trace_path(self) -> Path | None:
        """Where ``trace=`` wrote the trace on :meth:`close` (None before, or when not kept)."""
        return self._session.trace.written

    # --- state ---------------------------------------------------------------------------

    @property
    def page(self) -> Page:
        """The Playwright ``Page`` this Stagehand drives (it follows new tabs: see :attr:`pages`)."""
        return self._tabs.current  # type: ignore[no-any-return]

    @property
    def blocked_requests(self) -> list[BlockedRequest]:
        """What ``allowed_domains`` refused while this Stagehand held it (verbs, agent runs, your own
        navigations), in order, this Stagehand's variable values redacted from each URL."""
        guard = self._session.guard
        return [b.model_copy(update={"url": self._variables_seen.redact(b.url)}) for b in guard.blocked] if guard else []

    @property
    def pages(self) -> list[Page]:
        """The open tabs this Stagehand tracks, in the order they opened: its first page and every
        tab opened from a tracked tab (popups, ``target=_blank`` links).

        A tab opened by the driven tab becomes the driven tab (``follow_new_tabs=True``, the
        default), as it would for a person clicking: from the next call on, so a verb that opens
        one finishes on its own tab; when the driven tab closes, the one driven before it takes over. :meth:`switch_to_page` chooses explicitly.
        """
        return list(self._tabs.pages)

    async def switch_to_page(self, page: Page | int) -> None:
        """Drive another tracked tab: a ``Page`` from :attr:`pages` or its index there."""
        self._check_not_closed()
        target = self._tabs.resolve(page)
        self._tabs.switch(target)
        await target.bring_to_front()

    async def new_page(self, url: str | None = None) -> Page:
        """Open a new tab in this Stagehand's browser context, drive it, and go to ``url`` if given."""
        await self._guarded()
        created = await self.page.context.new_page()
        self._tabs.add(created)
        if url is not None:
            await created.goto(url)
        return created

    async def close_page(self, page: Page | int | None = None) -> None:
        """Close a tracked tab (the driven one by default); the tab driven before it takes over."""
        self._check_not_closed()
        target = self._tabs.resolve(self.page if page is None else page)
        if len(self._tabs.pages) == 1:
            raise InvalidArgumentError("close_page() would close the last tab; use close() to end the Stagehand.")
        await target.close()

    @property
    def downloads(self) -> list[SavedDownload]:
        """Every file the tracked tabs downloaded so far (path, suggested name, size, SHA-256)."""
        return list(self._tabs.downloads)

    @property
    def failed_downloads(self) -> list[DownloadFailure]:
        """Downloads the tracked tabs started that could not be saved: name, URL and why."""
        return list(self._tabs.failed_downloads)

    async def finish_downloads(self, timeout: float = DOWNLOAD_WAIT) -> list[SavedDownload]:
        """Wait up to ``timeout`` seconds for the downloads still saving; one still unsaved then is
        stopped and listed in :attr:`failed_downloads`. Returns :attr:`downloads`."""
        await self._tabs.finish_downloads(timeout)
        return self.downloads

    async def save_storage_state(self, path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """The browser context's cookies and local storage, written to ``path`` (mode 0600) when given.

        Load it later with ``Stagehand.launch(browser_options=BrowserOptions(storage_state=path))``
        to start logged in. The file holds session cookies: keep it out of version control.
        """
        self._check_not_closed()
        state: dict[str, Any] = dict(await self.page.context.storage_state())
        if path is not None:
            write_storage_state(path, state)
        return state

    def _check_not_closed(self) -> None:
        if self._closed:
            raise PageClosedError("This Stagehand is closed; create a new one.")

    def _check_open(self) -> None:
        self._check_not_closed()
        self._tabs.check_current()

    def _driven(self) -> PageSession:
        """The session of the tab driven now (see :attr:`pages` for the rule); a verb keeps it to its end."""
        self._check_not_closed()
        return self._pages.of(self._tabs.check_current())  # the driven tab, read once and checked open

    # --- verbs ---------------------------------------------------------------------------

    async def snapshot(self, *, selector: str | None = None, confidence: bool = False,
                       timeout: float | None = SNAPSHOT_TIMEOUT) -> Snapshot:
        """Capture the page as a :class:`Snapshot`: outline, id -> XPath and id -> URL maps.

        ``selector`` (XPath, or CSS) limits the snapshot to that element's subtree; only that
        subtree is fetched from the browser. ``confidence=True`` also measures
        ``Snapshot.dom_confidence`` in the page (about 5-15% more time on a large page).
        ``timeout`` (seconds, None for none) bounds the capture: a page whose script never yields
        the main thread raises :class:`StagehandTimeoutError` instead of hanging.
        """
        await self._guarded()
        return await self._driven().snapshot(selector=selector, confidence=confidence, timeout=timeout)

    # --- models and operations -----------------------------------------------------------

    def _get_client(self) -> LLMClient:
        return self._models.require()

    def _has_model(self) -> bool:
        return self._models.has_model

    async def model_ready(self) -> ModelLoad:
        """Wait for the model to load (a local one starts loading with the Stagehand); what the load took, apart from calls."""
        return await self._models.ready()

    @property
    def metrics(self) -> Metrics:
        """Model usage of this Stagehand: ``.total`` and ``.by_purpose`` (observe, act, heal, extract)."""
        return self._models.metrics

    async def _install_helpers(self) -> None:
        await self._driven().install_helpers()

    def _context(self, what: str, variables: Variables | None = None, timeout: float | None = None) -> OperationContext:
        # Built once per call (checked before anything else happens, by the check every entry point
        # makes on variables); every prompt of the call, heal included, and the executor read this set.
        self._variables_seen = VariableSet.of(variables, what=f"{what}(variables=...)").remembering(self._variables_seen)
        client, missing_model = self._models.for_call()
        return OperationContext(
            session=self._driven(),  # the tab driven now, to the end of the call (a popup it opens waits)
            client=client, missing_model=missing_model,
            token_budget=self._token_budget,
            dom_settle_timeout=self._dom_settle_timeout,
            self_heal=self._self_heal,
            cache=self._cache,
            variables=self._variables_seen,
            deadline=deadline_of(what, timeout),  # the verb's one deadline: every bound below derives from it
        )

    async def _run(self, what: str, timeout: float | None, operation: Callable[[], Awaitable[T]],
                   instruction: str | None = None, *, ctx: OperationContext | None = None, title: str = "") -> T:
        """Run a verb on ``ctx``'s session (default: the tab driven now), by its deadline; a trace's group names it."""
        deadline = ctx.deadline if ctx is not None else deadline_of(what, timeout)
        await self._guarded()
        session = ctx.session if ctx is not None else self._driven()  # made by _context just now, checked open there
        try:
            async with asyncio.timeout_at(deadline) as scope, verb_step(session, what, instruction or title,
                                                                        self._variables_seen, spent=lambda: self.metrics.total) as step:
                await session.install_helpers()
                result = await traced_operation(what, operation, instruction=instruction, url=session.page.url,
                                                variables=self._variables_seen)
                step.result = result
                return result
        except TimeoutError as exc:
            if isinstance(exc, StagehandTimeoutError) or not scope.expired():
                raise
            raise StagehandTimeoutError(f"{what}() did not finish within timeout={timeout:g} s.") from exc
        except PageClosedError:
            self._session.trace.failed = True
            raise
        except Exception:
            self._session.trace.failed = True
            if session.page.is_closed():
                raise PageClosedError(f"{what}() failed because the page was closed.") from None
            raise
        finally:
            await self._session.sweep_blocked_tabs()  # a tab the verb opened to a refused address

    async def observe(
        self,
        instruction: str | None = None,
        *,
        variables: Variables | None = None,
        selector: str | None = None,
        ignore_selectors: Sequence[str] = (),
        vision: Literal["auto"] | bool = "auto",
        timeout: float | None = None,
    ) -> list[Action]:
        """Find elements that match ``instruction`` and the action for each, as :class:`Action`s.

        Without an instruction: the page's actionable elements. ``variables`` name the
        ``%placeholders%`` the returned arguments may use (the model never sees values).
        ``selector`` limits the page to a subtree; ``ignore_selectors`` leave subtrees out.
        ``vision``: ``"auto"`` adds an annotated screenshot (numbered boxes = outline ids) when the
        page's DOM confidence is low or the outline alone yields nothing; ``True`` always, ``False`` never.
        """
        instruction = check_instruction("observe", instruction, required=False)
        ctx = self._context("observe", variables, timeout)
        return await self._run("observe", timeout, partial(
            _observe.observe, ctx, instruction, selector=selector, ignore_selectors=list(ignore_selectors), vision=vision,
        ), instruction=instruction, ctx=ctx)

    async def act(
        self,
        action: Action | str,
        *,
        variables: Variables | None = None,
        vision: Literal["auto"] | bool = "auto",
        timeout: float | None = None,
        element: ElementIdentity | None = None,
    ) -> ActResult:
        """Run an :class:`Action` (no model call) or plan one from an instruction and run it.

        ``%name%`` placeholders in the action's arguments are filled from ``variables`` right
        before the browser call. Raises the executor's typed errors when the action cannot
        run (after one self-heal attempt); returns ``success=False`` when the model finds no
        element for the instruction. ``vision`` applies to planning, as in :meth:`observe`.
        ``element`` (with an Action): the role and name of the element the action was chosen on,
        as an exported agent run gives it; the page must still show that element at the
        selector, else the act heals (one model call) or refuses with a typed error.
        """
        if element is not None:
            if not isinstance(element, ElementIdentity) or not isinstance(action, Action):
                raise InvalidArgumentError(
                    f"act(element=...) takes an ElementIdentity(role=..., name=...) with an Action, not "
                    f"{type(element).__name__} with {type(action).__name__}.")
        if isinstance(action, Action):
            ctx = self._context("act", variables, timeout)
            return await self._act_reporting(ctx, timeout, partial(_act.act_action, ctx, action, element),
                                             title=action_title(action))
        if isinstance(action, str):
            instruction = required_instruction("act", action)
            ctx = self._context("act", variables, timeout)
            return await self._act_reporting(
                ctx, timeout, partial(_act.act_instruction, ctx, instruction, vision),
                instruction=instruction)
        raise InvalidArgumentError(
            f"act() takes an Action (e.g. from observe()) or an instruction string, not {type(action).__name__}."
        )

    async def _act_reporting(self, ctx: OperationContext, timeout: float | None, operation: Callable[[], Awaitable[ActResult]],
                             instruction: str | None = None, title: str = "") -> ActResult:
        """Run an act and add what it spent (model usage) and what it downloaded to its result."""
        metrics = ctx.client.metrics if ctx.client is not None else None  # the client this act asks
        spent_before = metrics.total if metrics is not None else Usage()
        downloads_before = len(self._tabs.downloads)
        result = await self._run("act", timeout, operation, instruction=instruction, ctx=ctx, title=title)
        self._session.trace.failed |= not result.success
        # A download still running after this stays in the background and shows in `downloads` when saved.
        await self._tabs.wait_for_downloads(timeout if timeout is not None else DOWNLOAD_WAIT)
        return result.model_copy(update={"usage": metrics.total - spent_before if metrics is not None else Usage(),
                                         "downloads": self._tabs.downloads[downloads_before:]})

    @overload
    async def extract(self, instruction: str | None = ..., *, schema: type[M], selector: str | None = ...,
                      screenshot: bool = ..., timeout: float | None = ..., report: Literal[False] = ...) -> M: ...

    @overload
    async def extract(self, instruction: str | None = ..., *, schema: type[M], selector: str | None = ...,
                      screenshot: bool = ..., timeout: float | None = ..., report: Literal[True]) -> ExtractResult[M]: ...

    @overload
    async def extract(self, instruction: str | None = ..., schema: dict[str, Any] | None = ..., *,
                      selector: str | None = ..., screenshot: bool = ..., timeout: float | None = ...,
                      report: bool = ...) -> Any: ...

    async def extract(self, instruction: str | None = None, schema: type[BaseModel] | dict[str, Any] | None = None, *,
                      selector: str | None = None, screenshot: bool = False, timeout: float | None = None,
                      report: bool = False) -> Any:
        """Extract data from the page.

        - ``schema`` a pydantic model class: returns an instance; a JSON Schema dict: returns
          data valid against it (any type, not only objects).
        - ``instruction`` only: returns ``{"extraction": str}``.
        - nothing: returns ``{"page_text": <the page outline>}`` with no model call.

        URL fields (``HttpUrl``/``AnyUrl``, ``format: uri``) come back as the real absolute URLs.
        ``screenshot=True`` adds a screenshot of the page (or of the ``selector`` region) so values
        only visible as pixels can be read; it needs a model that accepts images. A model in choice
        mode answers with page lines; ``report=True`` returns an :class:`~stagehand_py.ExtractResult`.
        """
        instruction, report = check_instruction("extract", instruction, required=False), check_flag("extract", "report", report)
        ctx = self._context("extract", timeout=timeout)
        result = await self._run("extract", timeout, partial(
            _extract.extract, ctx, instruction, schema, selector=selector, screenshot=screenshot),
            instruction=instruction, ctx=ctx)
        return result if report else result.data

    async def expect(self, claim: str, *, screenshot: bool = False, raise_on_failure: bool | None = None,
                     timeout: float | None = None) -> Expectation:
        """Check a claim about the page in words (``"the cart shows 2 items"``): one model call on
        the page text (a screenshot too with ``screenshot=True``) returns an :class:`Expectation`:
        the verdict and the outline line it read as evidence (truthy when the claim holds).

        ``raise_on_failure``: raise :class:`ExpectationError` (an ``AssertionError``) with the
        evidence when the claim does not hold; ``None`` (default) raises inside a pytest test only.
        """
        checked = required_instruction("expect", claim)
        ctx = self._context("expect", timeout=timeout)
        verdict = await self._run("expect", timeout, partial(_expect.expect, ctx, checked, screenshot=screenshot),
                                  instruction=checked, ctx=ctx)
        under_pytest = "PYTEST_CURRENT_TEST" in os.environ
        if not verdict.passed and (raise_on_failure if raise_on_failure is not None else under_pytest):
            raise ExpectationError(verdict.explain(), expectation=verdict)
        return verdict

    # --- agent and judge -------------------------------------------------------------------

    def agent(self, config: AgentConfig | None = None, /, **options: Unpack[AgentOptions]) -> Agent:
        """A tool-using agent on this page; run a task with ``await agent.execute(instruction)``.

        Options are an :class:`~stagehand_py.agent.AgentConfig`, or its fields as keywords (they
        replace the config's): ``model`` defaults to this Stagehand's model; ``tools`` adds typed
        Python functions; ``mode="cua"`` drives the page by screenshot and coordinates;
        ``allowed_domains`` (glob patterns) blocks every other navigation, request and new tab
        while a task runs (narrowing this Stagehand's own, never widening it); ``checkpoint_path``, ``evidence_dir``, ``self_check``, ``use_vision``,
        ``on_safety_check`` and the long-horizon options are described on ``AgentConfig``.
        """
        from .agent import Agent, AgentConfig

        self._check_open()
        if config is not None and not isinstance(config, AgentConfig):
            raise InvalidArgumentError(f"agent() takes an AgentConfig (or keyword options), not {type(config).__name__}.")
        settings = (config or AgentConfig()).replace(options)
        client = self._models.make(settings.model) if settings.model is not None else self._models.require()
        return Agent(self, settings, client=client, fallback_client=self._models.fallback(settings.fallback_model),
                     before_run=self._guarded, cache_dir=self._cache.directory if self._cache is not None else None)

    async def evaluate(self, question: str, *, screenshot: bool = True, model: ModelSpec | None = None,
                       timeout: float | None = None) -> EvaluateResult:
        """Ask a judge model a yes/no question about the page: ``verdict`` is ``"yes"``, ``"no"``
        or ``"invalid"`` (the page cannot answer it), with ``reasoning``. The result is truthy
        only for ``"yes"``, so ``assert await sh.evaluate("Is the cart empty?")`` works in tests."""
        from .agent._judge import evaluate_page

        client = self._models.make(model) if model is not None else self._models.require()
        known = self._variables_seen
        return await self._run("evaluate", timeout,
                               lambda: evaluate_page(self, client, question, screenshot=screenshot, variables=known),
                               instruction=question)
