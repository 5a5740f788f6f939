"""Fixtures for the worked pytest example: the example shop served from 127.0.0.1.

``shop_url`` serves examples/site/ on a free port for the whole session. With
``SHOP_VARIANT=renamed`` the sign-in form's labels read differently, the way a page changes under
a recorded test (used to show the failure evidence the plugin leaves).
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

SITE = Path(__file__).resolve().parent.parent / "site"


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="session")
def shop_url() -> Iterator[Callable[[str], str]]:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "site"
        shutil.copytree(SITE, root)
        if os.environ.get("SHOP_VARIANT") == "renamed":
            login = root / "login.html"
            login.write_text(login.read_text().replace(">Username<", ">Login name<").replace(">Password<", ">Passphrase<"))
        server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield lambda path: f"http://127.0.0.1:{server.server_address[1]}/{path}"
        finally:
            server.shutdown()
            server.server_close()
