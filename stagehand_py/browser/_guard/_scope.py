"""What the parts of one context's guard share: the context and its first page, the policy, the
record, whether the guard is installed, and the DevTools session of each page it watches."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from ._record import BlockedLog

__all__ = ["GuardScope"]


@dataclass(eq=False)
class GuardScope:
    context: Any
    #: The page the guard was installed for: a main-frame navigation elsewhere is a new tab.
    main_page: Any
    #: Whether a URL passes (the policy's test); set by the guard.
    allows: Callable[[str], bool]
    log: BlockedLog
    installed: bool = False
    #: The ``Connection-Allowlist`` every document of the context gets, when the browser enforces it.
    header: str | None = None
    #: page -> its DevTools session (speculation rules, error pages; redirect hops if per page).
    page_sessions: dict[Any, Any] = field(default_factory=dict)
    #: DevTools target ids of the context's tabs (to tell a new tab's navigation from a frame's).
    tabs: set[str] = field(default_factory=set)
    pending: set[asyncio.Task[None]] = field(default_factory=set)

    def redact(self, text: str) -> str:
        return self.log.redact(text)

    def later(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` beside the event handler that started it; the guard waits for it on uninstall."""
        task = asyncio.ensure_future(work)
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    async def finish_pending(self) -> None:
        for task in list(self.pending):
            await asyncio.gather(task, return_exceptions=True)
