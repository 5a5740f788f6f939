"""What we record of a browser context while we drive it: Playwright's trace, and the run viewer's
pictures.

- **Groups.** While a Playwright trace records on a context (the user's ``context.tracing.start``,
  pytest-playwright's ``--tracing``, or ours), :func:`trace_group` names a stretch of work in it
  (``act: click "Sign in"``, ``agent step 3: fill Username``); the Playwright calls made meanwhile
  nest under it in the trace viewer. Titles go through the secrets module. With no trace recording
  nothing is sent (Playwright would ignore the group anyway, at the cost of a round trip).
- **Our traces.** :class:`TraceRecording` is a trace this library started on a context
  (``Stagehand(trace="on")``, the plugin's ``--stagehand-tracing``, the batch's ``--trace``). It
  learns every variable value typed while it records and scrubs them from the file when it stops
  (:mod:`._trace_scrub`), before the file exists where the user looks.
- **A trace we do not write** keeps what was typed (the call's parameters, DOM snapshots, request
  bodies) and we cannot rewrite it: :func:`check_trace_typing` refuses, before anything is typed, a
  variable whose value would go into it, unless the user named it in ``allow_secrets_in_trace``.
- **Watchers.** The run viewer registers an :class:`ActionWatcher` on a context; the executor calls
  it right before an action is sent (the element resolved, nothing typed yet), so the picture shows
  the page the action met, with the chosen element's rectangle.

Whether a trace records is read from Playwright's client-side tracing object (``_is_tracing``, set
by ``start``/``start_chunk`` and cleared by ``stop_chunk``/``stop`` of the same client, which is the
only client whose calls reach this context). A Playwright that no longer has it counts as
recording: secrets are then refused rather than typed into a trace we cannot see
(``tests/tracing/test_playwright_trace.py`` pins the attribute).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
from collections.abc import AsyncIterator, Awaitable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar
from weakref import WeakKeyDictionary

from .._errors import InvalidArgumentError, SecretInTraceError
from .._secrets import VariableSet
from .._util import write_bytes_atomic
from ._trace_scrub import scrub_trace

__all__ = ["TRACE_MODES", "ActionWatcher", "TraceMode", "TraceOnClose", "TraceRecording", "action_watcher", "check_trace_mode",
           "check_trace_typing", "in_trace_group", "is_recording", "recording_of", "remember_variables", "start_trace", "trace_group",
           "watch_actions"]

logger = logging.getLogger("stagehand_py.browser")

T = TypeVar("T")

TraceMode = Literal["on", "retain-on-failure", "off"]
TRACE_MODES: tuple[TraceMode, ...] = ("on", "retain-on-failure", "off")
#: Longest group title: the trace viewer shows one line per group.
_TITLE_CHARS = 160


def check_trace_mode(mode: object, *, what: str = "trace") -> TraceMode:
    if mode not in TRACE_MODES:
        raise InvalidArgumentError(f"{what} must be one of {', '.join(repr(m) for m in TRACE_MODES)}, not {mode!r}.")
    return mode  # checked just above (a Literal: mypy narrows `in` on it)


def _impl(obj: Any) -> Any:
    """Playwright's implementation object behind an async or sync API wrapper: one per context,
    whichever API (or our sync bridge's async view) the caller holds."""
    return getattr(obj, "_impl_obj", obj)


def is_recording(context: Any) -> bool:
    """Whether a Playwright trace records on ``context`` now (started by anyone through this client)."""
    state = getattr(_impl(getattr(context, "tracing", None)), "_is_tracing", None)
    return state if isinstance(state, bool) else True  # unknown: the safe side (see the module's docstring)


def _title(text: str, variables: VariableSet) -> str:
    title = " ".join(variables.redact(text).split())
    return title if len(title) <= _TITLE_CHARS else title[: _TITLE_CHARS - 1] + "…"


@contextlib.asynccontextmanager
async def trace_group(page: Any, title: str, variables: VariableSet) -> AsyncIterator[None]:
    """Name the work done inside as one group of the trace recording on ``page``'s context (none:
    nothing is sent). ``title`` is redacted with ``variables`` and cut to one line. Groups nest as
    the work does; two verbs run concurrently on one context interleave theirs (Playwright keeps one
    group stack per context)."""
    tracing = None
    try:
        context = page.context
        if is_recording(context):
            await context.tracing.group(_title(title, variables))
            tracing = context.tracing
    except Exception as exc:  # a closed page or context: the work itself will say so
        logger.debug("trace group %r not opened: %r", title[:40], exc)
    try:
        yield
    finally:
        if tracing is not None:
            try:
                await tracing.group_end()
            except Exception as exc:  # the context closed meanwhile: its trace ended with it
                logger.debug("trace group not closed: %r", exc)


async def in_trace_group(page: Any, title: str, variables: VariableSet, work: Awaitable[T]) -> T:
    """``await work`` inside :func:`trace_group` (for a call site that has one line to spare)."""
    async with trace_group(page, title, variables):
        return await work


# --- traces we record ------------------------------------------------------------------------


class TraceRecording:
    """A Playwright trace this library records on one browser context.

    Every variable value typed or hidden while it records (:meth:`hide`) is scrubbed from the file
    :meth:`stop` writes; with any value to hide, the screencast frames are left out too (pixels
    cannot be redacted by text). The trace records DOM snapshots, screenshots and the network, as
    pytest-playwright's ``--tracing`` does; ``playwright show-trace <file>`` opens it.
    """

    def __init__(self, context: Any) -> None:
        self.context = context
        self.hidden = VariableSet.of(None)
        self.stopped = False

    def hide(self, variables: VariableSet) -> None:
        """Scrub every value ``variables`` hides from this trace's file too."""
        self.hidden = variables.remembering(self.hidden)

    @property
    def active(self) -> bool:
        """Still recording: not stopped by us, and not by anyone else (Playwright's own state)."""
        return not self.stopped and is_recording(self.context)

    async def stop(self, path: str | os.PathLike[str] | None) -> Path | None:
        """Stop recording; with ``path``, write the scrubbed trace there (atomically: a reader never
        sees the unscrubbed file) and return it. Without, the trace is discarded."""
        if self.stopped:
            return None
        self.stopped = True
        _RECORDINGS.pop(_impl(self.context), None)
        if path is None:
            with contextlib.suppress(Exception):  # the context went first: nothing left to discard
                await self.context.tracing.stop()
            return None
        target = Path(path)
        with tempfile.TemporaryDirectory(prefix="stagehand-trace-") as scratch:
            raw = Path(scratch) / "raw.zip"
            await self.context.tracing.stop(path=str(raw))
            data = await asyncio.to_thread(scrub_trace, raw.read_bytes(), self.hidden)
        await asyncio.to_thread(write_bytes_atomic, target, data)
        return target


_RECORDINGS: WeakKeyDictionary[Any, TraceRecording] = WeakKeyDictionary()


async def start_trace(context: Any, *, title: str | None = None) -> TraceRecording:
    """Start a trace of ``context`` that this library writes (and scrubs). Raises
    :class:`InvalidArgumentError` when a trace already records there (yours: Playwright records
    one at a time per context)."""
    if is_recording(context):
        raise InvalidArgumentError(
            "a Playwright trace already records on this browser context (context.tracing.start, or pytest-playwright's "
            "--tracing); Playwright records one at a time. Use that one (stagehand_py groups its verbs in it) or stop it "
            "and let stagehand_py record: trace='on' / --stagehand-tracing on.")
    await context.tracing.start(screenshots=True, snapshots=True, sources=False, title=title)
    recording = _RECORDINGS[_impl(context)] = TraceRecording(context)
    return recording


class TraceOnClose:
    """A Stagehand's ``trace=`` (or its browser's ``BrowserOptions(trace=...)``): a trace of the
    context from the first call (for a browser we launch: from before the first page loads),
    written to :attr:`path` on close: always (``"on"``), or only when something failed
    (``"retain-on-failure"``: a verb raised or an act did not succeed, or the ``async with`` block
    raised)."""

    def __init__(self) -> None:
        self.mode: TraceMode = "off"
        self.path: Path | None = None
        self.failed = False
        #: The file written on close (None until then, or when nothing was kept).
        self.written: Path | None = None
        self._recording: asyncio.Task[TraceRecording] | None = None

    def configure(self, mode: object, path: str | os.PathLike[str] | None, *, what: str) -> None:
        checked = check_trace_mode(mode, what=f"{what}(trace=...)")
        if checked == "off" and path is None:
            return
        if self.mode != "off" and (checked, path) != (self.mode, self.path):
            raise InvalidArgumentError("trace is given twice: pass it to the Stagehand or in BrowserOptions, not both.")
        if path is not None and not isinstance(path, str | os.PathLike):
            raise InvalidArgumentError(f"{what}(trace_path=...) takes a file path, not {type(path).__name__}.")
        self.mode, self.path = checked, Path(path) if path is not None else None

    async def start(self, context: Any) -> None:
        """Start recording ``context`` (once; at once for a later call)."""
        if self.mode == "off":
            return
        if self._recording is None:
            if self.path is None:
                stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
                self.path = Path.cwd() / "stagehand-traces" / f"trace-{stamp}.zip"
            self._recording = asyncio.ensure_future(start_trace(context, title="stagehand_py"))
        await asyncio.shield(self._recording)

    async def finish(self) -> Path | None:
        """Stop recording: write the scrubbed file when it is kept, else discard it."""
        task, self._recording = self._recording, None
        if task is None:
            return None
        try:
            recording = await task
        except Exception:  # it never started (the verb that tried said why)
            return None
        keep = self.mode == "on" or (self.mode == "retain-on-failure" and self.failed)
        self.written = await recording.stop(self.path if keep else None)
        return self.written


def recording_of(context: Any) -> TraceRecording | None:
    """The trace this library records on ``context``, while it records."""
    recording = _RECORDINGS.get(_impl(context))
    return recording if recording is not None and recording.active else None


def check_trace_typing(page: Any, used: Sequence[str], variables: VariableSet) -> None:
    """Before an action types the values of the variables ``used``: a trace we record learns every
    value to hide; a trace someone else records (we cannot rewrite its file) refuses the action with
    :class:`SecretInTraceError`, unless each name is one the user allowed in traces."""
    if not used:
        return
    context = page.context
    ours = recording_of(context)
    if ours is not None:
        ours.hide(variables)
        return
    if not is_recording(context):
        return
    refused = [name for name in used if not variables.may_enter_trace(name)]
    if refused:
        listed = ", ".join(f"%{name}%" for name in refused)
        raise SecretInTraceError(
            f"a Playwright trace you started records this browser context, and it would keep the value of {listed} "
            "(the call's parameters, the DOM snapshots, the request body); stagehand_py cannot redact a trace it does "
            "not write, so nothing was typed. Let stagehand_py record the trace instead (Stagehand(trace='on'), "
            "--stagehand-tracing on: values scrubbed), stop yours first, or accept the value in your trace: "
            f"Stagehand(..., allow_secrets_in_trace=[{', '.join(repr(n) for n in refused)}]).",
            variable=refused[0])


# --- watchers ----------------------------------------------------------------------------------


class ActionWatcher(Protocol):
    """Called right before an action is sent to ``element`` (resolved, nothing typed yet)."""

    async def before_action(self, page: Any, element: Any, action: Any, variables: VariableSet) -> None: ...

    def hide(self, variables: VariableSet) -> None: ...


_WATCHERS: WeakKeyDictionary[Any, ActionWatcher] = WeakKeyDictionary()


def watch_actions(context: Any, watcher: ActionWatcher | None) -> None:
    """Call ``watcher`` before every action on ``context`` (None: stop)."""
    if watcher is None:
        _WATCHERS.pop(_impl(context), None)
    else:
        _WATCHERS[_impl(context)] = watcher


def action_watcher(context: Any) -> ActionWatcher | None:
    return _WATCHERS.get(_impl(context))


def remember_variables(context: Any, variables: VariableSet) -> None:
    """Tell what records ``context`` (our trace, the run viewer) every value ``variables`` hides: a
    page may show a value typed earlier, in a snapshot, a URL or a request of this context."""
    if not variables.hides_anything:
        return
    ours = recording_of(context)
    if ours is not None:
        ours.hide(variables)
    watcher = action_watcher(context)
    if watcher is not None:
        watcher.hide(variables)
