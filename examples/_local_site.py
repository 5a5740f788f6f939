"""Serve ``examples/site/`` from 127.0.0.1 on a free port, in a background thread (stdlib only).

::

    with serve_site() as site:
        print(site.url("login.html"))   # http://127.0.0.1:<port>/login.html
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SITE_DIR = Path(__file__).resolve().parent / "site"


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass  # an example's output is its own prints, not an access log


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A browser that closes a connection early (it is shutting down) is not news.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@dataclass(frozen=True)
class LocalSite:
    """A running local site: ``origin`` is ``http://127.0.0.1:<port>``."""

    origin: str

    def url(self, path: str = "") -> str:
        return f"{self.origin}/{path.lstrip('/')}"


@contextmanager
def serve_site(directory: Path = SITE_DIR) -> Iterator[LocalSite]:
    """Serve ``directory`` until the block ends; the port is picked by the OS."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    httpd = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, name="examples-site", daemon=True)
    thread.start()
    try:
        yield LocalSite(f"http://127.0.0.1:{httpd.server_address[1]}")
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
