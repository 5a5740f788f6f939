"""A quiet, threaded static HTTP server for tests and benchmarks (stdlib only).

It serves a folder (``tests/assets`` by default) from 127.0.0.1 only. Two extras:

* ``.html`` files go through a tiny template step: every ``{{NAME}}`` listed in
  ``StaticServer.substitutions`` is replaced. The fixtures set ``{{SAME_ORIGIN}}``
  (``http://127.0.0.1:<port>``) and ``{{CROSS_ORIGIN}}`` (``http://localhost:<other port>``),
  both without a trailing slash, so a page can embed a cross-site child.
* Dynamic routes: ``server.route("/path", handler)`` where ``handler(request)`` returns a
  ``Response``. It works as a context manager, so a test's route goes away with the test::

      with server.route("/api/items", lambda req: Response.json([1, 2])):
          ...

  Built in: ``/slow?ms=N`` answers JSON after N ms (for settle tests) and ``/echo`` answers
  the request (method, path, query, body) as JSON (for form posts).
"""

from __future__ import annotations

import contextlib
import json
import mimetypes
import posixpath
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

ASSETS = Path(__file__).resolve().parent / "assets"

# The items /slow answers with; dynamic.html renders them.
SLOW_ITEMS = ["Alpha", "Bravo", "Charlie"]


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes


@dataclass
class Response:
    status: int = 200
    body: bytes | str = b""
    content_type: str = "text/plain; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, data: object, status: int = 200) -> Response:
        return cls(status, json.dumps(data), "application/json")

    @classmethod
    def html(cls, text: str, status: int = 200) -> Response:
        return cls(status, text, "text/html; charset=utf-8")


Handler = Callable[[Request], Response]


class Route:
    """A registered dynamic route; ``remove()`` or leave the ``with`` block to drop it."""

    def __init__(self, server: StaticServer, path: str) -> None:
        self._server, self.path = server, path

    def remove(self) -> None:
        self._server.unroute(self.path)

    def __enter__(self) -> Route:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def _slow(req: Request) -> Response:
    ms = int(req.query.get("ms", "0"))
    time.sleep(min(ms, 30_000) / 1000)
    return Response.json({"slept_ms": ms, "items": SLOW_ITEMS})


def _echo(req: Request) -> Response:
    return Response.json(
        {
            "method": req.method,
            "path": req.path,
            "query": req.query,
            "body": req.body.decode("utf-8", "replace"),
        }
    )


class _Handler(BaseHTTPRequestHandler):
    server: StaticServer
    # HTTP/1.0: one request per connection, so a slow response never blocks another one.
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch(head=True)

    def do_POST(self) -> None:
        self._dispatch()

    def _dispatch(self, head: bool = False) -> None:
        parts = urlsplit(self.path)
        path = unquote(parts.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        req = Request(self.command, path, query, dict(self.headers.items()), body)
        handler = self.server.routes.get(path)
        try:
            resp = handler(req) if handler else self.server.serve_file(path)
        except Exception as exc:  # a broken test route should fail loudly, not hang the page
            resp = Response(500, f"{type(exc).__name__}: {exc}")
        self._send(resp, head)

    def _send(self, resp: Response, head: bool) -> None:
        data = resp.body.encode("utf-8") if isinstance(resp.body, str) else resp.body
        try:
            self.send_response(resp.status)
            self.send_header("Content-Type", resp.content_type)
            self.send_header("Content-Length", str(len(data)))
            # Tests reload pages and change routes; a cached copy would hide that.
            self.send_header("Cache-Control", "no-store")
            for name, value in resp.headers.items():
                self.send_header(name, value)
            self.end_headers()
            if not head:
                self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser navigated away mid-response


class StaticServer(ThreadingHTTPServer):
    """Serves ``root`` on 127.0.0.1; ``host_name`` is the name used in URLs (127.0.0.1 or
    localhost — the latter makes a cross-site origin without binding any other interface)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, root: Path = ASSETS, host_name: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.root = Path(root).resolve()
        self.host_name = host_name
        self.substitutions: dict[str, str] = {}
        self.routes: dict[str, Handler] = {"/slow": _slow, "/echo": _echo}
        self._thread: threading.Thread | None = None

    # --- addresses -------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self.server_address[1]

    @property
    def origin(self) -> str:
        return f"http://{self.host_name}:{self.port}"

    @property
    def prefix(self) -> str:
        return self.origin + "/"

    def url(self, path: str = "") -> str:
        return self.prefix + path.lstrip("/")

    # --- routes ----------------------------------------------------------------------------
    def route(self, path: str, handler: Handler) -> Route:
        self.routes[path] = handler
        return Route(self, path)

    @contextlib.contextmanager
    def recording(self, path: str, response: Response) -> Iterator[list[str]]:
        """Route ``path`` to ``response`` for the ``with`` block, yielding the paths it received."""
        received: list[str] = []

        def record(req: Request) -> Response:
            received.append(req.path)
            return response

        with self.route(path, record):
            yield received

    def unroute(self, path: str) -> None:
        self.routes.pop(path, None)

    # --- files -----------------------------------------------------------------------------
    def serve_file(self, path: str) -> Response:
        rel = posixpath.normpath(path).lstrip("/")
        target = (self.root / rel).resolve()
        if target.is_dir():
            target = target / "index.html"
        if not target.is_relative_to(self.root) or not target.is_file():
            return Response(404, f"not found: {path}")
        data = target.read_bytes()
        ctype = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        if target.suffix in (".html", ".htm"):
            text = data.decode("utf-8")
            for name, value in self.substitutions.items():
                text = text.replace("{{" + name + "}}", value)
            return Response.html(text)
        if ctype.startswith("text/") or ctype in ("application/javascript", "image/svg+xml"):
            ctype += "; charset=utf-8"
        return Response(200, data, ctype)

    # --- lifecycle -------------------------------------------------------------------------
    def start(self) -> StaticServer:
        self._thread = threading.Thread(
            target=self.serve_forever, name=f"static-{self.port}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> StaticServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_pair(root: Path = ASSETS) -> tuple[StaticServer, StaticServer]:
    """Start the same-origin (127.0.0.1) and cross-site (localhost) servers over one folder,
    each knowing the other's origin for ``{{SAME_ORIGIN}}`` / ``{{CROSS_ORIGIN}}``."""
    same = StaticServer(root, "127.0.0.1").start()
    cross = StaticServer(root, "localhost").start()
    subs = {"SAME_ORIGIN": same.origin, "CROSS_ORIGIN": cross.origin}
    # One shared dict, so a page gets the same values whichever server serves it.
    same.substitutions = cross.substitutions = subs
    return same, cross
