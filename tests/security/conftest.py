"""Every browser attack runs on both paths a user has: a page the user launched with plain
Playwright and wrapped (``Stagehand(page)``), and a page in a browser ``Stagehand.launch()``
started (the library's own flags and init scripts, driven over its direct CDP connection).

* ``page_kind``, ``new_stagehand``: tests/conftest.py.
* ``page``            the page of a Stagehand made that way, for tests that drive the page or
                      the library's parts directly.

Launching a browser per test costs seconds on a loaded machine, so the launched browser is
started once per session by ``Stagehand.launch()`` (``launched_stagehand``, tests/conftest.py)
and each test gets a new context in it, with a Stagehand sharing the launched session's direct
CDP connection (``_browser.stagehand_beside``).
"""

from __future__ import annotations

import urllib.parse

import pytest
import pytest_asyncio
import websockets
from _server import Request, Response


@pytest_asyncio.fixture(loop_scope="session")
async def page(new_stagehand):
    return (await new_stagehand()).page


SEARCH_FORM = """<!doctype html><title>Search</title><form action="/results" method="get">
<label>Query <input name=q></label><button>Search</button></form>"""


@pytest.fixture
def search_site(server):
    """A GET search form: what is typed goes into the results URL (URL-encoded), and the results
    page echoes it in its title, upper-cased in its text, and in an image URL."""

    def results(req: Request) -> Response:
        q = req.query.get("q", "")
        return Response.html(f"<title>Results for {q}</title><h1>Results</h1><p>You searched {q.upper()}</p>"
                             f"<img src='/missing.png?q={urllib.parse.quote(q)}'>")

    with server.route("/search", lambda req: Response.html(SEARCH_FORM)), server.route("/results", results):
        yield server.url("search")


@pytest.fixture
def hostile(cross_server):
    """Requests the hostile host received (paths)."""
    with cross_server.recording("/steal", Response.html("<title>stolen</title><p>you reached the hostile host</p>")) as hits:
        yield hits


@pytest.fixture
async def hostile_ws():
    """A WebSocket echo server reached as ``localhost`` (another host): its URL and the handshake
    paths it saw."""
    handshakes: list[str] = []

    async def echo(ws) -> None:
        handshakes.append(ws.request.path)
        async for message in ws:
            await ws.send(message)

    async with websockets.serve(echo, "127.0.0.1", 0) as ws_server:
        port = ws_server.sockets[0].getsockname()[1]
        yield f"ws://localhost:{port}/socket", handshakes
