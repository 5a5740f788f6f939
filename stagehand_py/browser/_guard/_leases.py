"""Who holds a context's guard: one guard per browser context, shared by everyone who drives it.

A Stagehand given ``allowed_domains`` holds its context's guard for its lifetime; an agent run,
the MCP server and a batch row hold it too. The first holder with patterns makes and installs
the guard; a later holder with patterns narrows it for as long as it holds it (a URL passes only
when every holder's set admits it: a wider set never widens what passes); a holder without
patterns only reads it (what was blocked while it held it). The last holder with patterns to let
go uninstalls it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..._types import BlockedKind, BlockedRequest
from ._guard import DomainGuard

__all__ = ["GuardLease", "hold_guard"]

#: The guard of each context (by Playwright's own context object: the sync and async views of one
#: context are one key).
_GUARDS: dict[Any, DomainGuard] = {}
_HOLDERS: dict[Any, int] = {}


def _key(context: Any) -> Any:
    return getattr(context, "_impl_obj", context)


class GuardLease:
    """One holder's hold on its context's guard. ``blocked`` and :meth:`drain` are what was blocked
    since it began; ``redact`` (settable) hides its secret values in the guard's log."""

    def __init__(self, guard: DomainGuard, key: Any, patterns: tuple[str, ...] | None, *, first: bool,
                 redact: Callable[[str], str]) -> None:
        self._guard = guard
        self._key = key
        self._own = patterns  # the set this holder narrowed the guard with (None: it only reads)
        self._first = first  # it made the guard: its set is the guard's first
        self._start = self._read = len(guard.blocked)
        self.redact = redact
        self._stop_redacting = guard.redact_with(lambda text: self.redact(text))
        self._released = False

    @property
    def patterns(self) -> list[str]:
        """The set this holder gave, else the guard's first."""
        return list(self._own) if self._own is not None else self._guard.patterns

    def allows(self, url: str) -> bool:
        return self._guard.allows(url)

    def record(self, url: str, kind: BlockedKind, resource_type: str = "") -> BlockedRequest:
        return self._guard.record(url, kind, resource_type)

    @property
    def blocked(self) -> list[BlockedRequest]:
        return self._guard.blocked[self._start:]

    def drain(self) -> list[BlockedRequest]:
        """The blocks recorded since the last call."""
        new = self._guard.blocked[self._read:]
        self._read = len(self._guard.blocked)
        return new

    async def sweep(self) -> None:
        """Close the tabs opened to a blocked address."""
        await self._guard.sweep()

    async def release(self) -> None:
        """Let go: this holder's set no longer narrows the guard; the last holder with a set uninstalls it."""
        if self._released:
            return
        self._released = True
        self._stop_redacting()
        if self._own is None:
            return
        if self._first:
            self._guard.release_first()
        else:
            self._guard.widen(self._own)
        _HOLDERS[self._key] -= 1
        if _HOLDERS[self._key] == 0:
            del _HOLDERS[self._key]
            if _GUARDS.get(self._key) is self._guard:
                del _GUARDS[self._key]
            await self._guard.uninstall()


async def hold_guard(page: Any, patterns: Sequence[str] | None, *,
                     redact: Callable[[str], str] = lambda text: text) -> GuardLease | None:
    """Hold the guard of ``page``'s context: made and installed with ``patterns`` when the
    context has none (``page`` is then its main page), narrowed by them when it has one, only
    read when ``patterns`` is None; None when there is neither a guard nor patterns."""
    key = _key(page.context)
    guard = _GUARDS.get(key)
    if guard is None:
        if patterns is None:
            return None
        guard = DomainGuard(patterns, main_page=page)
        _GUARDS[key], _HOLDERS[key] = guard, 1
        lease = GuardLease(guard, key, tuple(patterns), first=True, redact=redact)
        try:
            await guard.install()
        except BaseException:
            await lease.release()
            raise
        return lease
    if patterns is not None:
        own = guard.narrow(patterns)
        _HOLDERS[key] += 1
        lease = GuardLease(guard, key, own, first=False, redact=redact)
    else:
        lease = GuardLease(guard, key, None, first=False, redact=redact)
    try:
        await guard.install()  # made by another holder a moment ago: its install may still run
    except BaseException:
        await lease.release()
        raise
    return lease
