"""allowed_domains against a hostile server: an allowed address that redirects to another host,
for a navigation, an iframe, an image and a fetch, and a WebSocket to another host, never reach
that host. The allowed host is 127.0.0.1, the hostile one `localhost` (a different host name on
another port); the hostile server counts every request it gets. Each scenario also runs without
the guard, as the control that shows the hostile host would be reached."""

from __future__ import annotations

import asyncio

import pytest
from _server import Request, Response

from stagehand_py.browser._guard import DomainGuard, url_allowed


@pytest.fixture
def redirecting(server):
    def redirect(req: Request) -> Response:
        return Response(302, "", headers={"Location": req.query["to"]})

    with server.route("/redirect", redirect):
        yield lambda to: server.url("redirect?to=") + to


SCENARIOS = {
    "navigation": "goto",
    "iframe": "<iframe src='{url}'></iframe>",
    "image": "<img src='{url}'>",
    "fetch": "<script>window.done = fetch('{url}').then(r => 'ok', e => 'blocked');</script>",
}


async def _run(page, server, kind: str, url: str) -> None:
    if kind == "navigation":
        try:
            await page.goto(url)
        except Exception:
            pass  # blocked: the navigation fails
        return
    await page.goto(server.url("index.html"))
    # set_content returns on the load event, which waits for the image and the frame to end
    # (loaded, refused or failed, every hop followed): the hostile host has had any request by
    # then. Waiting for the network to stay quiet 500 ms more ("networkidle") waited for nothing.
    await page.set_content(SCENARIOS[kind].format(url=url))
    if kind == "fetch":
        await page.evaluate("window.done")


@pytest.mark.parametrize("guarded", [True, False], ids=["guarded", "control-unguarded"])
@pytest.mark.parametrize("kind", list(SCENARIOS))
async def test_a_redirect_to_another_host_is_blocked(page, server, cross_server, hostile, redirecting, kind: str, guarded: bool) -> None:
    guard = DomainGuard([f"127.0.0.1:{server.port}"], main_page=page)
    if guarded:
        await guard.install()
    try:
        await _run(page, server, kind, redirecting(cross_server.url(f"steal?kind={kind}")))
    finally:
        await guard.uninstall()
    if guarded:
        assert hostile == []
        assert any(b.url.startswith(cross_server.origin) for b in guard.blocked), guard.blocked
    else:
        assert hostile == ["/steal"]  # the control: without the guard the redirect lands there


async def test_redirects_within_the_allowlist_still_work(page, server, redirecting) -> None:
    guard = DomainGuard([f"127.0.0.1:{server.port}"], main_page=page)
    await guard.install()
    try:
        await page.goto(redirecting(server.url("redirect?to=" + server.url("forms.html"))))
        assert page.url == server.url("forms.html")
        assert await page.title()
    finally:
        await guard.uninstall()
    assert guard.blocked == []


@pytest.mark.parametrize("guarded", [True, False], ids=["guarded", "control-unguarded"])
async def test_a_websocket_to_another_host_never_connects(page, server, hostile_ws, guarded: bool) -> None:
    ws_url, handshakes = hostile_ws
    guard = DomainGuard([f"127.0.0.1:{server.port}"], main_page=page)
    if guarded:
        await guard.install()
    try:
        await page.goto(server.url("index.html"))
        outcome = await page.evaluate("""(url) => new Promise((resolve) => {
            const ws = new WebSocket(url);
            ws.onopen = () => { ws.send('secret'); ws.onmessage = (e) => resolve('open:' + e.data); };
            ws.onclose = () => resolve('closed');
            setTimeout(() => resolve('timeout'), 5000);
        })""", ws_url)
    finally:
        await guard.uninstall()
    await asyncio.sleep(0.1)
    if guarded:
        assert outcome == "closed" and handshakes == []
        assert [b.resource_type for b in guard.blocked] == ["websocket"]
    else:
        assert outcome == "open:secret" and handshakes == ["/socket"]


@pytest.mark.parametrize(("url", "pattern"), [
    ("http://Example.COM./x", "example.com"),  # case and a trailing dot
    ("http://shop.example.com./", "*.example.com"),
    ("http://xn--bcher-kva.example/", "bücher.example"),  # IDN: the browser asks in punycode
    ("http://bücher.example/", "xn--bcher-kva.example"),
    ("http://user:secret@example.com:8080/", "example.com:8080"),  # userinfo is not the host
])
def test_hosts_are_compared_as_the_network_sees_them(url: str, pattern: str) -> None:
    assert url_allowed(url, [pattern])


@pytest.mark.parametrize(("url", "pattern"), [
    ("http://example.com@evil.test/", "example.com"),  # the host is evil.test
    ("http://example.com.evil.test/", "example.com"),
    ("http://evil.test./", "example.com"),
])
def test_look_alike_hosts_stay_blocked(url: str, pattern: str) -> None:
    assert not url_allowed(url, [pattern])
