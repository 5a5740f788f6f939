"""One private session per tab, and one verb's call on it.

A :class:`PageSession` holds a tab's CDP sessions (its target and out-of-process iframes), the
frame ordinals its element ids are made of, the snapshot engine's memory of the walker in each
frame, and the identities (role and name) of the elements observe and act planned on. All of
it belongs to that tab's documents, so it lives and dies with the tab: :class:`PageSessions`
makes a session the first time a tab is driven and drops it when the tab closes.

An operation receives an :class:`OperationContext`: the session of the tab driven when it
started (kept to the end: a popup the act opens becomes the driven tab for the *next* verb, on
its own session, while the act settles, reads and records on the tab it acted on), the model
client already resolved and the call's settings; never the Stagehand itself, so no operation
imports or calls back into its caller.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import Page

from ._actions import install_page_helpers
from ._cache import ElementIdentity
from ._errors import ConfigurationError, InvalidArgumentError, PageClosedError, StagehandTimeoutError
from ._secrets import VariableSet
from ._util import page_address
from .browser._cdp import DirectConnection, PageTargets
from .llm import LLMClient
from .snapshot._capture import EngineMemory, FrameOrdinals, capture_element, capture_snapshot
from .snapshot._model import Snapshot

__all__ = ["SNAPSHOT_TIMEOUT", "OperationContext", "PageSession", "PageSessions"]

logger = logging.getLogger("stagehand_py")

#: Seconds a snapshot may take unless the caller says otherwise (the largest test pages take ~3 s).
SNAPSHOT_TIMEOUT = 60.0


class PageSession:
    """One tab's page, CDP targets, snapshot engine state and planned element identities."""

    def __init__(self, page: Page, *, direct: DirectConnection | None) -> None:
        self.page = page
        self._direct = direct
        self._targets: PageTargets | None = None
        self.ordinals = FrameOrdinals()
        self._memory = EngineMemory()
        self._helpers_installed = False
        #: selector -> role and name of the element an observe/act planned on; act(action) checks
        #: the page still shows that element there before acting.
        self.identities: dict[str, ElementIdentity] = {}
        #: The last whole-page snapshot taken (what a verb's model was shown): the run viewer's outline.
        self.last_read: Snapshot | None = None
        #: Set by the tab's "crash" event: a crashed renderer never answers a CDP detach (it waited forever).
        self.crashed = asyncio.Event()

    async def install_helpers(self) -> None:
        if not self._helpers_installed:
            await install_page_helpers(self.page)
            self._helpers_installed = True

    async def targets(self) -> PageTargets:
        """The tab's CDP sessions, opened on first use."""
        if self._targets is None:
            self._targets = await PageTargets.for_page(self.page, direct=self._direct)
        return self._targets

    async def snapshot(self, *, selector: str | None = None, confidence: bool = False,
                       timeout: float | None = SNAPSHOT_TIMEOUT, alone: bool = False) -> Snapshot:
        """This tab as a :class:`Snapshot` (see ``Stagehand.snapshot`` for the options). ``alone``
        (with ``selector``): read only that element when the page was read before (an identity
        check), not the whole page around it."""
        if timeout is not None and (not isinstance(timeout, (int, float)) or timeout <= 0):
            raise InvalidArgumentError(f"snapshot(timeout=...) must be a positive number of seconds or None, got {timeout!r}.")
        try:
            async with asyncio.timeout(timeout):
                targets = await self.targets()
                if alone and selector is not None and not confidence:
                    found = await capture_element(targets, self.ordinals, memory=self._memory, selector=selector)
                    if found is not None:
                        return found  # a part of the page: the viewer keeps the last whole-page read
                snap = await capture_snapshot(targets, self.ordinals, memory=self._memory,
                                              selector=selector, confidence=confidence)
        except TimeoutError as exc:
            raise StagehandTimeoutError(
                f"snapshot of {page_address(self.page.url)} did not finish within "
                f"{timeout:g} s: the page's main thread is busy (a script that never yields) or the page is enormous. "
                "Wait for the page, or pass a larger snapshot(timeout=...)."
            ) from exc
        self.last_read = snap if selector is None else self.last_read
        return snap

    async def close(self) -> None:
        """Detach from the tab's CDP targets (nothing to do when the tab went first)."""
        targets, self._targets = self._targets, None
        if targets is None or self.crashed.is_set():
            return
        detach = asyncio.ensure_future(targets.close())
        crash = asyncio.ensure_future(self.crashed.wait())
        try:
            # The crash event may arrive while the detach is in flight (it then never returns).
            await asyncio.wait({detach, crash}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            crash.cancel()
            if not detach.done():
                detach.cancel()
        if detach.done() and not detach.cancelled():
            try:
                detach.result()
            except PageClosedError:
                pass  # the page went first; nothing to detach from


class PageSessions:
    """The sessions of a Stagehand's tabs: one per tab, made when it is first driven, dropped
    (and its CDP sessions detached) when the tab closes."""

    def __init__(self, *, direct: DirectConnection | None) -> None:
        self._direct = direct
        self._sessions: dict[Page, PageSession] = {}
        self._listeners: list[tuple[Page, str, Any]] = []
        self._closing: set[asyncio.Task[None]] = set()

    def of(self, page: Page) -> PageSession:
        """The session of ``page``, made now when the tab is driven for the first time."""
        session = self._sessions.get(page)
        if session is None:
            session = self._sessions[page] = PageSession(page, direct=self._direct)
            if not page.is_closed():
                def on_close(_page: Page) -> None:
                    self._drop(page)

                def on_crash(_page: Page) -> None:
                    session.crashed.set()
                page.on("close", on_close)
                page.on("crash", on_crash)
                self._listeners += [(page, "close", on_close), (page, "crash", on_crash)]
        return session

    def _drop(self, page: Page) -> None:
        session = self._sessions.pop(page, None)
        if session is not None:
            task = asyncio.get_running_loop().create_task(session.close())
            self._closing.add(task)
            task.add_done_callback(self._closed)

    def _closed(self, task: asyncio.Task[None]) -> None:
        self._closing.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.debug("detaching a closed tab's CDP sessions failed: %r", task.exception())

    async def close(self) -> None:
        """Detach every session (the user's pages stay open) and stop watching the tabs."""
        sessions, self._sessions = list(self._sessions.values()), {}
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
        for session in sessions:
            await session.close()  # with the tabs still watched: a crash while detaching ends the wait
        for page, event, listener in self._listeners:
            page.remove_listener(event, listener)
        self._listeners.clear()


@dataclass
class OperationContext:
    """One call's tab (its :class:`PageSession`, kept for the whole call
    even when the act opens a popup), its model client and its settings."""

    session: PageSession
    #: The model client, resolved by the Stagehand before the call; None when none is configured.
    client: LLMClient | None
    #: What to do to get a model, said by :meth:`model` when ``client`` is None.
    missing_model: str
    token_budget: int
    dom_settle_timeout: float
    self_heal: bool
    cache: Any = None
    #: This call's variables, built once when the call came in; they hide every value this
    #: Stagehand was given, also in later calls that pass no variables.
    variables: VariableSet = field(default_factory=lambda: VariableSet.of(None))
    #: ``time.monotonic()`` by which the verb must finish (its ``timeout=``), or None.
    deadline: float | None = None
    #: The session's page and identities (selector -> role and name of the element in the
    #: snapshot each action was chosen from; written to the action cache with the actions), as
    #: plain fields: the session does not change during the call.
    page: Page = field(init=False)
    identities: dict[str, ElementIdentity] = field(init=False)

    def __post_init__(self) -> None:
        self.page = self.session.page
        self.identities = self.session.identities

    def model(self) -> LLMClient:
        """The call's model client, or a :class:`ConfigurationError` saying how to configure one."""
        if self.client is None:
            raise ConfigurationError(self.missing_model)
        return self.client
