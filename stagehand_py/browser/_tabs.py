"""The tabs a Stagehand drives, and the files they download.

The rule for new tabs: a tab opened by the tab being driven (``window.open``, a
``target=_blank`` link, a form with a target) is tracked and, when ``follow`` is on, becomes
the driven tab, because the user who clicked such a link in a browser would now be looking at
it. A tab opened by a tab that is not driven is tracked but not followed. When the driven tab
closes, the most recently driven tab still open takes over (its opener, usually).

Downloads from any tracked tab are saved into one folder, named as the site proposed (made
safe, shortened to what a filesystem takes keeping the extension, and unique), and recorded with
their size and the SHA-256 of the bytes kept. A download that could not be saved is recorded too
(:attr:`Tabs.failed_downloads`), never only logged.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import InvalidArgumentError, PageClosedError
from .._logging import logger
from .._types import SavedDownload

__all__ = ["Tabs", "DownloadFailure"]

_UNSAFE_NAME = re.compile(r"[\x00-\x1f/\\:*?\"<>|]+")
#: The longest saved name in UTF-8 bytes: filesystems take 255, and " (n)" may be added.
_MAX_NAME_BYTES = 200
#: The longest ending kept as an extension when a name is shortened (".tar.gz" is two).
_MAX_SUFFIX_CHARS = 16


@dataclass(frozen=True)
class DownloadFailure:
    """A download the page started that could not be saved: what it was, and why."""

    suggested_filename: str
    url: str
    error: str


class Tabs:
    """Tracks pages from ``first`` on: popups, the driven one, downloads."""

    def __init__(self, first: Any, *, follow: bool = True, downloads_dir: str | os.PathLike[str] | None = None) -> None:
        self._pages: list[Any] = []
        # Driven tabs, most recent last: where to go back when the driven one closes.
        self._history: list[Any] = [first]
        self._follow = follow
        self._downloads_dir = Path(downloads_dir) if downloads_dir is not None else None
        self._saving: dict[asyncio.Task[None], Any] = {}  # saving task -> its Playwright download
        self.downloads: list[SavedDownload] = []
        self.failed_downloads: list[DownloadFailure] = []
        self._listeners: list[tuple[Any, str, Any]] = []
        self._watch(first)

    # --- pages -------------------------------------------------------------------------------

    @property
    def current(self) -> Any:
        return self._history[-1]

    @property
    def pages(self) -> list[Any]:
        return [page for page in self._pages if not page.is_closed()]

    def _watch(self, page: Any) -> None:
        self._pages.append(page)
        for event, handler in (("popup", lambda popup: self._on_popup(page, popup)), ("download", self._on_download),
                               ("close", lambda _page: self._on_close(page))):
            page.on(event, handler)
            self._listeners.append((page, event, handler))

    def detach(self) -> None:
        """Stop tracking: a closed Stagehand leaves the user's pages as it found them."""
        for page, event, handler in self._listeners:
            page.remove_listener(event, handler)
        self._listeners.clear()

    def _on_popup(self, opener: Any, popup: Any) -> None:
        if popup in self._pages:
            return
        self._watch(popup)
        if self._follow and opener is self.current:
            self._history.append(popup)

    def _on_close(self, page: Any) -> None:
        open_history = [p for p in self._history if p is not page and not p.is_closed()]
        if open_history:
            self._history = open_history
        elif self.pages:
            self._history = [self.pages[-1]]
        # else: the last tab closed; `current` stays the closed page and the Stagehand reports it.

    def resolve(self, page: Any) -> Any:
        """A tracked, open page from a page object or its index in :attr:`pages`."""
        pages = self.pages
        if isinstance(page, int) and not isinstance(page, bool):
            if not -len(pages) <= page < len(pages):
                raise InvalidArgumentError(f"there is no tab {page}: {len(pages)} tab(s) are open (0 to {len(pages) - 1}).")
            return pages[page]
        for candidate in pages:
            if candidate is page:
                return candidate
        raise InvalidArgumentError("that page is not one of this Stagehand's open tabs (see Stagehand.pages).")

    def switch(self, page: Any) -> None:
        self._history = [p for p in self._history if p is not page] + [page]

    def add(self, page: Any) -> None:
        """Track a page opened on purpose (``new_page``) and drive it."""
        if page not in self._pages:
            self._watch(page)
        self.switch(page)

    # --- downloads -----------------------------------------------------------------------------

    def _on_download(self, download: Any) -> None:
        task = asyncio.get_running_loop().create_task(self._save(download))
        self._saving[task] = download
        task.add_done_callback(lambda done: self._saving.pop(done, None))

    async def _save(self, download: Any) -> None:
        target: Path | None = None
        try:
            folder = self._folder()
            target = _unique(folder, _safe_name(download.suggested_filename))
            await download.save_as(target)
            size, digest = await asyncio.to_thread(_size_and_sha256, target)
        except BaseException as exc:  # a failed download is the site's; the act that caused it still happened
            if target is not None:
                target.unlink(missing_ok=True)  # the name reserved for it holds nothing of it (or half of it)
            if not isinstance(exc, Exception):
                raise  # stopped (finish_downloads records why)
            logger.warning("download from %s was not saved: %r", getattr(download, "url", "?"), exc)
            self._failed(download, f"{type(exc).__name__}: {exc}")
            return
        self.downloads.append(SavedDownload(path=str(target), suggested_filename=download.suggested_filename,
                                            size=size, sha256=digest, url=download.url))

    def _failed(self, download: Any, error: str) -> None:
        self.failed_downloads.append(DownloadFailure(suggested_filename=str(getattr(download, "suggested_filename", "")),
                                                     url=str(getattr(download, "url", "")), error=error))

    def _folder(self) -> Path:
        if self._downloads_dir is None:
            # Made on the first download only, and left behind: the files are the user's.
            self._downloads_dir = Path(tempfile.mkdtemp(prefix="stagehand-downloads-"))
        self._downloads_dir.mkdir(parents=True, exist_ok=True)
        return self._downloads_dir

    async def wait_for_downloads(self, timeout: float | None = None) -> None:
        """Wait until every download that has started is saved."""
        await asyncio.sleep(0)  # let a download event queued by the last action start its task
        if self._saving:
            await asyncio.wait(set(self._saving), timeout=timeout)

    async def finish_downloads(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the downloads still saving; stop any still unsaved
        then and record it in :attr:`failed_downloads`, so none is left half-written or unlisted."""
        await self.wait_for_downloads(timeout)
        pending = list(self._saving.items())
        for task, download in pending:
            task.cancel()
            self._failed(download, f"still downloading after {timeout:g} s; stopped")
        if pending:
            await asyncio.wait([task for task, _ in pending])
        for _, download in pending:
            try:  # the browser stops it too, so no file appears later where nobody looks
                await download.cancel()
            except Exception as exc:  # the page or browser is gone: nothing is downloading any more
                logger.debug("cancelling a stopped download failed: %r", exc)

    def check_current(self) -> Any:
        page = self.current
        if page.is_closed():
            raise PageClosedError("The page this Stagehand drives has been closed (and no other tab is open).")
        return page


def _safe_name(suggested: str) -> str:
    """The site's name without separators or control characters, shortened to ``_MAX_NAME_BYTES``
    UTF-8 bytes keeping its extension (a 300-character name is still a ``.pdf``)."""
    name = _UNSAFE_NAME.sub("_", os.path.basename(suggested or "")).strip(" .") or "download"
    if len(name.encode("utf-8")) <= _MAX_NAME_BYTES:
        return name
    stem, suffix = os.path.splitext(name)
    if len(suffix) > _MAX_SUFFIX_CHARS or len(suffix.encode("utf-8")) > _MAX_NAME_BYTES // 2:
        stem, suffix = name, ""
    room = _MAX_NAME_BYTES - len(suffix.encode("utf-8"))
    short = stem.encode("utf-8")[:room].decode("utf-8", errors="ignore").rstrip(" .")
    return (short or "download") + suffix


def _unique(folder: Path, name: str) -> Path:
    """A new file in ``folder`` named ``name`` (or ``name (n)``), created empty to reserve it, so
    two downloads proposing one name never write the same file."""
    stem, suffix = Path(name).stem, Path(name).suffix
    counter = 0
    while True:
        target = folder / (name if counter == 0 else f"{stem} ({counter}){suffix}")
        try:
            with target.open("xb"):
                return target
        except FileExistsError:
            counter += 1


def _size_and_sha256(path: Path) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
            size += len(block)
    return size, digest.hexdigest()
