"""The async ``Stagehand``: browser lifecycle and the public verbs."""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any

from ._errors import InvalidArgumentError, PageClosedError
from .browser._cdp import PageTargets
from .browser._session import BrowserSession, connect_browser, launch_browser
from .snapshot._capture import FrameOrdinals, capture_snapshot
from .snapshot._model import Snapshot

__all__ = ["Stagehand"]


class Stagehand:
    """Drive one Playwright page with natural language.

    Three ways to get one:

    - ``Stagehand(page=page)`` wraps your own async Playwright ``Page`` (any launch, any
      context); :meth:`close` then leaves your page and browser alone.
    - ``await Stagehand.launch()`` starts a local headless Chromium that :meth:`close` ends.
    - ``await Stagehand.connect("http://127.0.0.1:9222")`` attaches to a running browser.

    Use it as an async context manager to close it automatically.
    """

    def __init__(self, page: Any, *, _session: BrowserSession | None = None) -> None:
        if page is None or not hasattr(page, "context") or not hasattr(page, "goto"):
            raise InvalidArgumentError(
                f"Stagehand(page=...) needs an async Playwright Page, got {type(page).__name__}. "
                "For a sync Page use stagehand_py.sync_api.Stagehand; to start a browser use `await Stagehand.launch()`."
            )
        self._page = page
        self._session = _session or BrowserSession(page=page)
        self._targets: PageTargets | None = None
        self._ordinals = FrameOrdinals()
        self._closed = False

    # --- lifecycle -----------------------------------------------------------------------

    @classmethod
    async def launch(
        cls,
        *,
        headless: bool = True,
        executable_path: str | None = None,
        args: Sequence[str] = (),
        viewport: dict[str, int] | None = None,
    ) -> Stagehand:
        """Start a local Chromium and return a Stagehand on a fresh page in it.

        The executable is ``executable_path``, else ``$STAGEHAND_CHROMIUM_PATH``, else
        Playwright's own Chromium if installed, else the system ``/usr/bin/chromium``.
        ``args`` are added to the flags a headless (root, container) session needs.
        """
        session = await launch_browser(headless=headless, executable_path=executable_path, args=args, viewport=viewport)
        return cls(session.page, _session=session)

    @classmethod
    async def connect(cls, cdp_url: str) -> Stagehand:
        """Attach to a running Chromium over CDP and drive its first page."""
        session = await connect_browser(cdp_url)
        return cls(session.page, _session=session)

    async def close(self) -> None:
        """Release what this Stagehand opened (its CDP sessions, and a browser it launched)."""
        if self._closed:
            return
        self._closed = True
        if self._targets is not None:
            try:
                await self._targets.close()
            except PageClosedError:
                pass  # the page went first; nothing to detach from
            self._targets = None
        await self._session.close()

    async def __aenter__(self) -> Stagehand:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    # --- state ---------------------------------------------------------------------------

    @property
    def page(self) -> Any:
        """The Playwright ``Page`` this Stagehand drives."""
        return self._page

    def _check_open(self) -> None:
        if self._closed:
            raise PageClosedError("This Stagehand is closed; create a new one.")
        if self._page.is_closed():
            raise PageClosedError("The page this Stagehand drives has been closed.")

    async def _page_targets(self) -> PageTargets:
        if self._targets is None:
            self._targets = await PageTargets.for_page(self._page, direct=self._session.direct)
        return self._targets

    # --- verbs ---------------------------------------------------------------------------

    async def snapshot(self, *, selector: str | None = None) -> Snapshot:
        """Capture the page as a :class:`Snapshot`: outline, id -> XPath and id -> URL maps.

        ``selector`` (XPath, or CSS) limits the snapshot to that element's subtree; only that
        subtree is fetched from the browser.
        """
        self._check_open()
        targets = await self._page_targets()
        return await capture_snapshot(targets, self._ordinals, selector=selector)
