"""allowed_domains checks every hop of a redirect chain, not only the first, and reads
``Location`` as a browser does; speculative loads to another host are refused where they can be
and always recorded.

The allowed host is 127.0.0.1, the hostile one ``localhost`` (another host name, another port),
which counts every request it gets. Each scenario runs three ways: guarded; guarded by the
route alone (the guard without its browser-level hop check: what the library did before), the
control that shows Playwright hands later hops to no route; and unguarded.
"""

from __future__ import annotations

import json
import urllib.parse

import pytest
from _server import Request, Response

from stagehand_py.agent._domains import DomainGuard, url_allowed

from .test_allowlist import SCENARIOS as KINDS
from .test_allowlist import _run


@pytest.fixture
def hops(server, cross_server):
    """``chain(n, final)``: an allowed URL answering ``n`` 302s on 127.0.0.1, the last to ``final``;
    ``backslash(path)``: an allowed URL answering ``Location: /\\localhost:<port>/<path>``."""

    def hop(req: Request) -> Response:
        n = int(req.query["n"])
        final = req.query["final"]
        nxt = server.url("hop?" + urllib.parse.urlencode({"n": n - 1, "final": final})) if n > 1 else final
        return Response(302, "", headers={"Location": nxt})

    def backslash(req: Request) -> Response:
        return Response(302, "", headers={"Location": f"/\\localhost:{cross_server.port}/{req.query['to']}"})

    with server.route("/hop", hop), server.route("/bs", backslash):
        yield {
            "chain": lambda n, final: server.url("hop?" + urllib.parse.urlencode({"n": n, "final": final})),
            "backslash": lambda to: server.url("bs?" + urllib.parse.urlencode({"to": to})),
        }


async def _guard(page, server, how: str) -> DomainGuard:
    guard = DomainGuard([f"127.0.0.1:{server.port}"], main_page=page)
    if how == "route-only":
        async def no_hop_check() -> None:
            return None
        guard._watch_redirect_hops = no_hop_check  # type: ignore[method-assign]
    if how != "unguarded":
        await guard.install()
    return guard


@pytest.mark.parametrize("how", ["guarded", "control-route-only", "control-unguarded"])
@pytest.mark.parametrize("attack", ["three-302s", "backslash-location"])
@pytest.mark.parametrize("kind", list(KINDS))
async def test_every_hop_of_a_chain_is_checked(page, server, cross_server, hostile, hops, kind: str, attack: str,
                                              how: str) -> None:
    url = (hops["chain"](3, cross_server.url(f"steal?{kind}")) if attack == "three-302s"
           else hops["backslash"](f"steal?{kind}"))
    guard = await _guard(page, server, how.removeprefix("control-"))
    try:
        await _run(page, server, kind, url)
    finally:
        await guard.uninstall()
    if how == "guarded":
        assert hostile == []
        assert [b.url for b in guard.blocked] == [cross_server.url(f"steal?{kind}")]
    elif how == "control-unguarded":
        assert hostile == ["/steal"]  # the control: the unguarded browser lands there
    elif attack == "three-302s":
        # The route alone: Playwright gives routes only the first hop of a top-level navigation's
        # chain; for a frame, an image and a fetch the old guard held (measured, both page kinds).
        assert hostile == (["/steal"] if kind == "navigation" else [])
    else:
        # The old route-only guard checked the first Location, read by urljoin as a path on the
        # allowed host; now it resolves it as a browser does and blocks it.
        assert hostile == [] and guard.blocked


async def test_a_chain_inside_the_allowlist_still_arrives(page, server, hops) -> None:
    guard = await _guard(page, server, "guarded")
    try:
        await page.goto(hops["chain"](3, server.url("forms.html")))
        assert page.url == server.url("forms.html") and await page.title()
        fetched = await page.evaluate("(u) => fetch(u).then(r => r.url + ' ' + r.status)", hops["chain"](3, server.url("index.html")))
        assert fetched == server.url("index.html") + " 200"  # the browser followed the hops itself
    finally:
        await guard.uninstall()
    assert guard.blocked == []


@pytest.mark.parametrize(("location", "expected_host"), [
    ("/\\evil.example/x", "evil.example"),
    ("\\\\evil.example/x", "evil.example"),
    ("http:/\\evil.example/", "evil.example"),
    ("https:evil.example", "evil.example"),
    ("//evil.example\t/x", "evil.example"),
    (" /\\evil.example", "evil.example"),
])
def test_location_is_resolved_as_browsers_resolve_it(location: str, expected_host: str) -> None:
    from urllib.parse import urljoin, urlsplit

    from stagehand_py._util import resolve_url, url_parts

    base = "http://127.0.0.1:8000/start"
    resolved = resolve_url(base, location)
    assert resolved is not None and url_parts(resolved).host == expected_host  # type: ignore[union-attr]
    assert not url_allowed(resolved, ["127.0.0.1:8000"])
    if location.startswith("/\\"):
        assert urlsplit(urljoin(base, location)).hostname == "127.0.0.1"  # the control: urljoin reads a path


@pytest.mark.parametrize(("url", "pattern", "allowed"), [
    ("http://xn--fa-hia.example/", "faß.example", True),  # UTS #46, as browsers: ß kept
    ("http://fass.example/", "faß.example", False),  # IDNA 2003 would map ß to ss: another registrant
    ("http://faß.example/", "xn--fa-hia.example", True),
    ("http://FAß.example./", "*.example", True),
    ("http://shop.xn--fa-hia.example/", "*.faß.example", True),
    ("http://evil.example\\@127.0.0.1/", "127.0.0.1", False),  # a browser reads evil.example as the host
])
def test_hosts_are_normalised_with_uts46(url: str, pattern: str, allowed: bool) -> None:
    assert url_allowed(url, [pattern]) is allowed


def test_control_python_idna_2003_maps_eszett_away() -> None:
    assert "faß".encode("idna") == b"fass"


SPECULATING = """<!doctype html><title>Speculation</title><p>Hello</p>
<script type="speculationrules">{rules}</script>"""


@pytest.fixture
def speculation_site(server, cross_server):
    """A page whose speculation rules ask for a prefetch and a prerender on the hostile host."""
    hits: list[str] = []

    def dyn(req: Request) -> Response:
        hits.append(f"{req.path}?v={req.query.get('v', '')}")
        return Response.html("<title>hostile</title><p>prefetched</p>")

    rules = json.dumps({"prefetch": [{"source": "list", "urls": [cross_server.url("dyn?v=prefetch")]}],
                        "prerender": [{"source": "list", "urls": [cross_server.url("dyn?v=prerender")]}]})
    with cross_server.route("/dyn", dyn), server.route("/speculate", lambda req: Response.html(SPECULATING.format(rules=rules))):
        yield server.url("speculate"), hits


async def _speculate(page, url: str, hits: list[str]) -> None:
    await page.goto(url)
    # The browser decides when to speculate: wait (generously) for its first request to arrive.
    await page.wait_for_timeout(500)
    for _ in range(60):
        if hits:
            break
        await page.wait_for_timeout(250)
    await page.wait_for_timeout(1000)  # time for the second speculation


@pytest.mark.parametrize("guarded", [True, False], ids=["guarded", "control-unguarded"])
async def test_speculative_loads_to_another_host_are_recorded(page, server, cross_server, speculation_site,
                                                              guarded: bool) -> None:
    url, hits = speculation_site
    guard = await _guard(page, server, "guarded" if guarded else "unguarded")
    try:
        await _speculate(page, url, hits)
    finally:
        await guard.uninstall()
    if guarded:
        recorded = {(b.kind, b.resource_type, b.url) for b in guard.blocked}
        assert ("speculation", "prefetch", cross_server.url("dyn?v=prefetch")) in recorded
        assert any(kind == "speculation" and u == cross_server.url("dyn?v=prerender") for kind, _, u in recorded)
    else:
        assert "/dyn?v=prefetch" in hits and "/dyn?v=prerender" in hits  # the control: both speculations ran
        assert guard.blocked == []  # and nothing knew of them


@pytest.mark.xfail(strict=True, reason="known gap: Chromium sends a speculation-rules prefetch (and the prefetch a "
                   "prerender starts with) from the browser process, outside every route and DevTools interception; "
                   "it is recorded in evidence.blocked, not stopped (docs/security.md)")
async def test_a_speculative_prefetch_never_reaches_another_host(page, server, speculation_site) -> None:
    url, hits = speculation_site
    guard = await _guard(page, server, "guarded")
    try:
        await _speculate(page, url, hits)
    finally:
        await guard.uninstall()
    assert hits == []
