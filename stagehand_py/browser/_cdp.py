"""The CDP channel: how the snapshot engine talks Chrome DevTools Protocol to a page.

Two transports behind one small interface:

- :class:`DirectConnection`: our own websocket to the browser's debugging endpoint, with
  flattened sessions. Used when we launched the browser (or were given its CDP URL): every
  message goes straight to Chromium, measured ~1.7x faster than the relay on large pages.
- Playwright's ``CDPSession`` (the relay through Playwright's driver): works for any page a
  user hands us, whatever launched it.

:class:`PageTargets` hides the difference: it yields a session for the page's own target and
one for every out-of-process iframe (a separate CDP target).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from typing import Any, Protocol

from .._errors import CDPError, PageClosedError
from .._logging import logger

__all__ = ["CDPSession", "DirectConnection", "PageTargets", "PlaywrightSession", "loads_json"]

try:  # orjson parses the multi-megabyte DOM payloads of large pages ~3x faster.
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency, this keeps us importable without it
    _orjson = None  # type: ignore[assignment]


def loads_json(raw: str | bytes) -> Any:
    """Parse a CDP message or an in-page answer. orjson refuses a lone surrogate (``"\\ud800"``,
    which page text can hold and Chrome passes on); the standard parser takes it, so one odd
    character on a hostile page never kills the connection's reader."""
    if _orjson is not None:
        try:
            return _orjson.loads(raw)
        except _orjson.JSONDecodeError:
            pass
    return json.loads(raw)


class CDPSession(Protocol):
    """Anything that can send a CDP command to one target and return its result."""

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]: ...


def _is_closed_message(message: str) -> bool:
    lowered = message.lower()
    return any(s in lowered for s in ("target closed", "has been closed", "session closed", "no target with given id", "browser has disconnected"))


class PlaywrightSession:
    """A Playwright ``CDPSession`` with our error translation."""

    def __init__(self, session: Any) -> None:
        self._session = session

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        try:
            result: dict[str, Any] = await self._session.send(method, params or {})
            return result
        except Exception as exc:  # Playwright raises a plain Error with the protocol message
            text = str(exc)
            if _is_closed_message(text):
                raise PageClosedError(f"CDP {method} failed because the page or browser is closed: {text}") from exc
            raise CDPError(f"CDP {method} failed: {text}", method=method) from exc

    async def detach(self) -> None:
        try:
            await self._session.detach()
        except Exception:  # already gone with its page; nothing left to release
            logger.debug("CDP session detach failed (page already closed)")


class DirectConnection:
    """One websocket to a browser-level CDP endpoint, multiplexing flattened sessions."""

    def __init__(self, ws: Any) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._listeners: list[Callable[[str, dict[str, Any], str | None], None]] = []
        self._closed = False
        self._closed_because = "it was closed"  # said in every later error, so a log names the cause
        self._reader = asyncio.get_running_loop().create_task(self._read_loop())

    @classmethod
    async def open(cls, ws_url: str) -> DirectConnection:
        import websockets  # imported lazily: only the direct transport needs it

        # No size cap: a large page's DOM is tens of megabytes. No compression: it costs more
        # CPU than it saves on loopback.
        ws = await websockets.connect(ws_url, max_size=None, compression=None, ping_interval=None)
        return cls(ws)

    async def _read_loop(self) -> None:
        try:
            async for raw in self._ws:
                message = loads_json(raw)
                msg_id = message.get("id")
                if msg_id is not None:
                    future = self._pending.pop(msg_id, None)
                    if future is not None and not future.done():
                        future.set_result(message)
                    continue
                for listener in list(self._listeners):
                    # One page's listener failing must not end the connection every page shares.
                    try:
                        listener(message.get("method", ""), message.get("params", {}), message.get("sessionId"))
                    except Exception:
                        logger.exception("A CDP event listener failed on %s", message.get("method", ""))
            if not self._closed:
                self._closed_because = "the browser closed the websocket"
        except Exception as exc:  # connection dropped: fail everything in flight, loudly
            self._closed_because = f"its reader stopped: {exc!r}"
            if not self._closed:
                logger.warning("The browser's CDP websocket stopped: %r", exc)
        finally:
            self._closed = True
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(PageClosedError(
                        f"The browser's CDP connection closed while a command was in flight ({self._closed_because})."))
            self._pending.clear()

    def add_listener(self, listener: Callable[[str, dict[str, Any], str | None], None]) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[str, dict[str, Any], str | None], None]) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    async def send(self, method: str, params: dict[str, Any] | None = None, *, session_id: str | None = None) -> dict[str, Any]:
        if self._closed:
            raise PageClosedError(f"Cannot send CDP {method}: the browser connection is closed ({self._closed_because}).")
        msg_id = next(self._ids)
        payload: dict[str, Any] = {"id": msg_id, "method": method, "params": params or {}}
        if session_id:
            payload["sessionId"] = session_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        try:
            await self._ws.send(json.dumps(payload))
        except Exception as exc:  # websockets' own ConnectionClosed: ours to name, not the caller's to import
            self._pending.pop(msg_id, None)
            raise PageClosedError(f"Cannot send CDP {method}: the browser connection is closed ({exc!r}).") from exc
        message = await future
        if "error" in message:
            error = message["error"]
            text = f"{error.get('message', '')} {error.get('data', '')}".strip()
            if _is_closed_message(text) or error.get("message") == "Session with given id not found.":
                raise PageClosedError(f"CDP {method} failed because the target is gone: {text}")
            raise CDPError(f"CDP {method} failed: {text}", method=method, code=error.get("code"))
        result: dict[str, Any] = message.get("result", {})
        return result

    def session(self, session_id: str) -> _DirectSession:
        return _DirectSession(self, session_id)

    async def close(self) -> None:
        self._closed = True
        self._closed_because = "its Stagehand closed it"
        await self._ws.close()
        self._reader.cancel()
        try:
            await self._reader
        except (asyncio.CancelledError, Exception):  # the reader ends by cancellation by design
            pass


class _DirectSession:
    def __init__(self, connection: DirectConnection, session_id: str) -> None:
        self._connection = connection
        self.session_id = session_id

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self._connection.send(method, params, session_id=self.session_id)


class PageTargets:
    """The CDP sessions of one page: its own target and its out-of-process iframes.

    ``main`` speaks for the page's target (the main frame and every same-process iframe);
    :meth:`oopif_sessions` maps the frame id of each out-of-process iframe to a session for it.
    """

    def __init__(self, page: Any, main: CDPSession, *, direct: DirectConnection | None, main_session_id: str | None) -> None:
        self.page = page
        self.main = main
        self._direct = direct
        self._main_session_id = main_session_id
        # direct transport: targetId (== the iframe's frame id) -> session, kept by events
        self._attached: dict[str, CDPSession] = {}
        self._parents: dict[str, str] = {}  # child session id -> parent session id
        # relay transport: Playwright Frame -> (frame id, session) or None for in-process frames
        self._relay_frames: dict[Any, tuple[str, PlaywrightSession] | None] = {}

    @classmethod
    async def for_page(cls, page: Any, *, direct: DirectConnection | None = None) -> PageTargets:
        """Open the sessions for ``page``; through ``direct`` when given, else Playwright's relay."""
        relay = PlaywrightSession(await page.context.new_cdp_session(page))
        if direct is None:
            return cls(page, relay, direct=None, main_session_id=None)
        info = await relay.send("Target.getTargetInfo")
        target_id = info["targetInfo"]["targetId"]
        await relay.detach()
        attached = await direct.send("Target.attachToTarget", {"targetId": target_id, "flatten": True})
        session_id = attached["sessionId"]
        targets = cls(page, direct.session(session_id), direct=direct, main_session_id=session_id)
        direct.add_listener(targets._on_event)
        await targets._auto_attach(session_id)
        return targets

    async def _auto_attach(self, session_id: str) -> None:
        assert self._direct is not None
        await self._direct.send(
            "Target.setAutoAttach",
            {"autoAttach": True, "waitForDebuggerOnStart": False, "flatten": True},
            session_id=session_id,
        )

    def _on_event(self, method: str, params: dict[str, Any], session_id: str | None) -> None:
        if method == "Target.attachedToTarget":
            if session_id != self._main_session_id and session_id not in self._parents:
                return  # another page's business
            info = params["targetInfo"]
            if info.get("type") != "iframe":
                return
            child = params["sessionId"]
            assert self._direct is not None
            self._attached[info["targetId"]] = self._direct.session(child)
            self._parents[child] = session_id or ""
            # Nested out-of-process frames attach to their own parent target.
            asyncio.get_running_loop().create_task(self._auto_attach_quietly(child))
        elif method == "Target.detachedFromTarget":
            child = params.get("sessionId")
            for target_id, session in list(self._attached.items()):
                if getattr(session, "session_id", None) == child:
                    del self._attached[target_id]
            self._parents.pop(child or "", None)

    async def _auto_attach_quietly(self, session_id: str) -> None:
        try:
            await self._auto_attach(session_id)
        except Exception as exc:  # the frame may navigate away before we get there
            logger.debug("auto-attach on child session failed: %r", exc)

    async def oopif_sessions(self) -> dict[str, CDPSession]:
        """Frame id -> session, for every out-of-process iframe of the page right now."""
        if self._direct is not None:
            # The attach events of iframes created since the last call may still be in flight;
            # one round trip on the main session lets them arrive first.
            await self.main.send("Runtime.evaluate", {"expression": "0", "returnByValue": True})
            return dict(self._attached)
        result: dict[str, CDPSession] = {}
        frames = list(self.page.frames)[1:]
        current = set(frames)
        for frame in list(self._relay_frames):
            if frame not in current:
                del self._relay_frames[frame]
        unknown = [f for f in frames if f not in self._relay_frames]
        if unknown:
            found = await asyncio.gather(*(self._relay_frame_session(f) for f in unknown))
            self._relay_frames.update(zip(unknown, found, strict=True))
        for entry in self._relay_frames.values():
            if entry is not None:
                result[entry[0]] = entry[1]
        return result

    async def _relay_frame_session(self, frame: Any) -> tuple[str, PlaywrightSession] | None:
        try:
            raw = await self.page.context.new_cdp_session(frame)
        except Exception:
            # Playwright only opens sessions for out-of-process frames; the rest live in their
            # parent's target and are reached through it.
            return None
        session = PlaywrightSession(raw)
        tree = await session.send("Page.getFrameTree")
        return tree["frameTree"]["frame"]["id"], session

    async def close(self) -> None:
        if self._direct is not None:
            self._direct.remove_listener(self._on_event)
            if self._main_session_id:
                try:
                    await self._direct.send("Target.detachFromTarget", {"sessionId": self._main_session_id})
                except Exception:  # the page may already be gone
                    logger.debug("detach from page target failed (already closed)")
        elif isinstance(self.main, PlaywrightSession):
            await self.main.detach()
