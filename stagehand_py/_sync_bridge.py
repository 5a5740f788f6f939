"""How the sync API runs the async core on a sync Playwright ``Page``.

Sync Playwright is async Playwright underneath: every sync API object wraps an *impl* object
(``_impl_obj``) that lives on an asyncio loop, and ``_sync(awaitable)`` runs a coroutine on
that loop from the sync side (the loop runs in Playwright's dispatcher greenlet while the
caller waits). So we make an *async* API view of the very same impl objects, hand it to the
async :class:`~stagehand_py.Stagehand`, and run each of its calls through ``_sync``. One
implementation, two faces; nothing is re-implemented for sync.

**Playwright internals this relies on** (Playwright has no public API for it). Each one is
pinned by ``tests/test_sync_api.py::test_playwright_internals_the_sync_bridge_relies_on``,
which fails naming the internal that moved, and checked again here at first use
(:func:`check_internals`):

- ``SyncBase._impl_obj`` and ``SyncBase._sync(awaitable)`` on sync API objects;
- ``playwright._impl._async_base.mapping`` / ``playwright._impl._sync_base.mapping``: the
  ``ImplToApiMapping`` singletons that turn impl objects into async / sync API objects
  (``from_impl``, ``from_maybe_impl``, ``_mapping``);
- ``playwright._impl._greenlets.run_in_greenlet`` / ``EventGreenlet``: how Playwright runs a
  user callback from its loop so that the callback may make sync calls; we run the user's
  agent tools and callbacks the same way (:func:`in_playwright_greenlet`);
- ``playwright._impl._impl_to_api_mapping.API_ATTR``: the attribute on an impl object that
  caches *its* API wrapper. Both flavours share it, so once the user's sync code has seen a
  ``BrowserContext``, async code asking for the same impl would get the *sync* wrapper (and
  the reverse). :func:`_install_flavour_guard` makes each mapping hand out a wrapper of its
  own flavour in that case (cached under a second attribute). For a program that uses one
  flavour only nothing changes: the guard never fires. It is installed once per process, on
  the first use of the sync API, never at import.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, TypeVar

from ._errors import ConfigurationError, PageClosedError

__all__ = [
    "PlaywrightInternalsChanged",
    "async_view",
    "check_internals",
    "in_playwright_greenlet",
    "run_sync",
    "sync_view",
]

T = TypeVar("T")

_GUARD_MARK = "_stagehand_flavour_guard"
_OWN_FLAVOUR_ATTR = {"async": "_stagehand_async_api_instance_", "sync": "_stagehand_sync_api_instance_"}
_guard_lock = threading.Lock()


class PlaywrightInternalsChanged(ConfigurationError):
    """The installed Playwright moved an internal the sync API relies on."""


def check_internals() -> None:
    """Raise :class:`PlaywrightInternalsChanged` naming each internal the bridge needs that is gone."""
    missing: list[str] = []
    try:
        from playwright._impl import _async_base, _impl_to_api_mapping, _sync_base
    except ImportError as exc:
        raise PlaywrightInternalsChanged(
            f"playwright._impl._async_base / _sync_base / _impl_to_api_mapping cannot be imported ({exc}); "
            "stagehand_py.sync_api needs them. Pin playwright to a version stagehand_py supports, or use the async API."
        ) from exc
    for module, name in ((_async_base, "mapping"), (_sync_base, "mapping"), (_impl_to_api_mapping, "API_ATTR")):
        if not hasattr(module, name):
            missing.append(f"{module.__name__}.{name}")
    for module in (_async_base, _sync_base):
        mapping = getattr(module, "mapping", None)
        for attr in ("from_impl", "from_maybe_impl", "_mapping"):
            if mapping is not None and not hasattr(mapping, attr):
                missing.append(f"{module.__name__}.mapping.{attr}")
    if not callable(getattr(_sync_base.SyncBase, "_sync", None)):
        missing.append("playwright._impl._sync_base.SyncBase._sync")
    try:
        from playwright._impl._greenlets import EventGreenlet, run_in_greenlet  # noqa: F401
    except ImportError:
        missing.append("playwright._impl._greenlets.run_in_greenlet/EventGreenlet")
    if missing:
        raise PlaywrightInternalsChanged(
            "stagehand_py.sync_api relies on Playwright internals that this Playwright no longer has: "
            + ", ".join(missing)
            + ". Pin playwright to a version stagehand_py supports, or use the async API."
        )


def _install_flavour_guard() -> None:
    from playwright._impl import _async_base, _sync_base
    from playwright._impl._impl_to_api_mapping import ImplToApiMapping, ImplWrapper

    with _guard_lock:
        for flavour, mapping, base in (
            ("async", _async_base.mapping, _async_base.AsyncBase),
            ("sync", _sync_base.mapping, _sync_base.SyncBase),
        ):
            if getattr(mapping, _GUARD_MARK, False):
                continue
            own_attr = _OWN_FLAVOUR_ATTR[flavour]

            def from_maybe_impl(
                obj: Any, visited: Any = None, *, _mapping: Any = mapping, _base: type = base, _own_attr: str = own_attr
            ) -> Any:
                # Playwright's own lookup; it recurses through self.from_maybe_impl (this function).
                result = ImplToApiMapping.from_maybe_impl(_mapping, obj, visited)
                if result is obj or not isinstance(result, ImplWrapper) or isinstance(result, _base):
                    return result
                # obj is an impl whose cached wrapper is of the other flavour: use our own.
                own = getattr(obj, _own_attr, None)
                if own is None:
                    api_class = _mapping._mapping[getattr(obj, "_api_impl_class", type(obj))]
                    own = api_class(obj)
                    setattr(obj, _own_attr, own)
                return own

            mapping.from_maybe_impl = from_maybe_impl  # type: ignore[method-assign]  # the guard, see module doc
            setattr(mapping, _GUARD_MARK, True)


def _prepare() -> None:
    check_internals()
    _install_flavour_guard()


def _view(obj: Any, flavour: str) -> Any:
    _prepare()
    # Importing the public modules registers their classes with the mappings.
    from playwright._impl import _async_base, _sync_base

    mapping, base = (
        (_async_base.mapping, _async_base.AsyncBase) if flavour == "async" else (_sync_base.mapping, _sync_base.SyncBase)
    )
    impl = getattr(obj, "_impl_obj", None)
    view = None if impl is None else mapping.from_maybe_impl(impl)
    if not isinstance(view, base):
        raise PlaywrightInternalsChanged(
            f"Could not make a {flavour} Playwright view of {type(obj).__name__} through _impl_obj and "
            f"playwright._impl._{flavour}_base.mapping (got {type(view).__name__}). "
            "Pin playwright to a version stagehand_py supports, or use the async API."
        )
    return view


def async_view(sync_obj: Any) -> Any:
    """The async Playwright API object for the same impl as the sync API object ``sync_obj``."""
    return _view(sync_obj, "async")


def sync_view(async_obj: Any) -> Any:
    """The sync Playwright API object for the same impl as the async API object ``async_obj``."""
    return _view(async_obj, "sync")


def run_sync(dispatcher: Any, coro: Awaitable[T]) -> T:
    """Run ``coro`` on the Playwright loop of the sync API object ``dispatcher``, and return its result.

    The coroutine's own errors propagate unchanged (the sync API raises what the async one
    does); a Playwright that was stopped (its loop closed, its driver gone) is a
    :class:`PageClosedError`.
    """
    from playwright._impl._errors import Error as PlaywrightError

    if dispatcher._loop.is_closed() or dispatcher._dispatcher_fiber.dead:
        if isinstance(coro, Coroutine):
            coro.close()  # never to be awaited: say so, instead of a "never awaited" warning
        raise PageClosedError("The Playwright behind this page has been stopped; start a new one and a new Stagehand.")
    try:
        result: T = dispatcher._sync(coro)
    except PlaywrightError as exc:
        if dispatcher._dispatcher_fiber.dead:  # the driver went away while we waited
            raise PageClosedError(f"The Playwright behind this page stopped during the call: {exc.message}") from exc
        raise
    return result


def in_playwright_greenlet(fn: Callable[..., Any], *, swap: Mapping[int, Any]) -> Callable[..., Any]:
    """``fn`` for the async core to call from Playwright's loop: it runs in a greenlet of its
    own (as Playwright runs sync event handlers), so it may make sync Playwright calls, and the
    call returns a future the core awaits. Arguments whose ``id`` is in ``swap`` are replaced
    (the async Stagehand by its sync facade). ``functools.wraps`` keeps ``fn``'s name, doc and
    signature for tool schemas."""
    from playwright._impl._greenlets import EventGreenlet, run_in_greenlet

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        args = tuple(swap.get(id(a), a) for a in args)
        kwargs = {k: swap.get(id(v), v) for k, v in kwargs.items()}
        return run_in_greenlet(EventGreenlet, lambda: fn(*args, **kwargs))

    return call
