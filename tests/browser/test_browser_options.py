"""Browser set-up on launch() and connect(): storage state, a persistent profile, a proxy, locale,
time zone, geolocation, user agent, headers; a real Playwright server; typed errors for bad values.

Every check reads the result from the page's side (navigator, Intl, the headers the test server
or the test's proxy received), and each has a control: the same check on a default context.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import socket
import stat
import subprocess
import sys

import pytest
from _browser import CHROMIUM_ARGS, CHROMIUM_EXECUTABLE
from _processes import process_group
from _server import Request, Response

from stagehand_py import (
    Action,
    BrowserOptions,
    ConfigurationError,
    Geolocation,
    InvalidArgumentError,
    ProxySettings,
    Stagehand,
)

PAGE_FACTS = """async () => ({
    language: navigator.language,
    timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
    userAgent: navigator.userAgent,
    viewport: [window.innerWidth, window.innerHeight],
    position: await new Promise(resolve => navigator.geolocation.getCurrentPosition(
        p => resolve([p.coords.latitude, p.coords.longitude]), e => resolve('denied: ' + e.code), {timeout: 3000})),
})"""


async def _launch(**kwargs) -> Stagehand:
    return await Stagehand.launch(args=["--disable-quic"], **kwargs)


class Recorder:
    """Test-server routes that record the headers of each request."""

    def __init__(self) -> None:
        self.seen: list[dict[str, str]] = []

    def page(self, request: Request) -> Response:
        self.seen.append({k.lower(): v for k, v in request.headers.items()})
        return Response.html("<h1>recorded</h1>")


# --- locale, time zone, geolocation, user agent, headers, viewport ---------------------------


async def test_context_settings_seen_from_the_page(server, context) -> None:
    recorder = Recorder()
    options = BrowserOptions(
        locale="de-DE", timezone_id="Asia/Tokyo", user_agent="StagehandTest/1.0 (options)",
        geolocation=Geolocation(latitude=48.8584, longitude=2.2945), viewport={"width": 900, "height": 700},
        extra_http_headers={"X-Stagehand-Test": "on"},
    )
    with server.route("/record", recorder.page):
        async with await _launch(browser_options=options) as sh:
            await sh.page.goto(server.url("record"))
            facts = await sh.page.evaluate(PAGE_FACTS)
        # Control: a default context on the same machine shows none of it.
        control_page = await context.new_page()
        await control_page.goto(server.url("record"))
        control = await control_page.evaluate(PAGE_FACTS)
    assert facts["language"] == "de-DE" and control["language"] != "de-DE"
    assert facts["timezone"] == "Asia/Tokyo" and control["timezone"] != "Asia/Tokyo"
    assert facts["userAgent"] == "StagehandTest/1.0 (options)" and control["userAgent"] != facts["userAgent"]
    assert facts["position"] == [48.8584, 2.2945] and control["position"] != facts["position"]
    assert facts["viewport"] == [900, 700]
    launched, default = recorder.seen
    assert launched["user-agent"] == "StagehandTest/1.0 (options)" and launched["x-stagehand-test"] == "on"
    assert launched["accept-language"].startswith("de-DE")
    assert "x-stagehand-test" not in default


# --- storage state and a persistent profile --------------------------------------------------


def _session_routes(server):
    def login(request: Request) -> Response:
        response = Response.html("<h1>welcome</h1><script>localStorage.setItem('theme', 'dark')</script>")
        response.headers["Set-Cookie"] = "session=ada-7f3e; Path=/; Max-Age=3600; HttpOnly"
        return response

    def whoami(request: Request) -> Response:
        cookie = request.headers.get("Cookie") or request.headers.get("cookie") or ""
        return Response.html(f"<h1>{'ada' if 'session=ada-7f3e' in cookie else 'anonymous'}</h1>")

    return server.route("/login", login), server.route("/whoami", whoami)


async def _whoami(sh: Stagehand, server) -> tuple[str, str | None]:
    await sh.page.goto(server.url("whoami"))
    return await sh.page.inner_text("h1"), await sh.page.evaluate("localStorage.getItem('theme')")


async def test_storage_state_round_trip(server, tmp_path) -> None:
    state_file = tmp_path / "state" / "ada.json"
    login, whoami = _session_routes(server)
    with login, whoami:
        async with await _launch(browser_options=BrowserOptions(save_storage_state_to=state_file)) as sh:
            await sh.page.goto(server.url("login"))
            assert await _whoami(sh, server) == ("ada", "dark")
            saved = await sh.save_storage_state()  # the method, without a file
            assert any(c["name"] == "session" for c in saved["cookies"])
        # Written on close, readable by its owner only (it holds a session cookie).
        assert stat.S_IMODE(state_file.stat().st_mode) == 0o600
        async with await _launch(browser_options=BrowserOptions(storage_state=state_file)) as again:
            assert await _whoami(again, server) == ("ada", "dark")
        # The dict works too; and the control: a launch with no state is anonymous.
        state = json.loads(state_file.read_text())
        async with await _launch(browser_options=BrowserOptions(storage_state=state)) as from_dict:
            assert (await _whoami(from_dict, server))[0] == "ada"
        async with await _launch() as fresh:
            assert await _whoami(fresh, server) == ("anonymous", None)


async def test_persistent_profile_survives_a_relaunch(server, tmp_path) -> None:
    profile = tmp_path / "profile"
    login, whoami = _session_routes(server)
    with login, whoami:
        async with await _launch(browser_options=BrowserOptions(user_data_dir=profile)) as sh:
            await sh.page.goto(server.url("login"))
            assert len(sh.pages) == 1  # the profile's own first tab is the one driven
        assert (profile / "Default").is_dir()
        async with await _launch(browser_options=BrowserOptions(user_data_dir=profile)) as again:
            assert await _whoami(again, server) == ("ada", "dark")
        async with await _launch(browser_options=BrowserOptions(user_data_dir=tmp_path / "other")) as control:
            assert await _whoami(control, server) == ("anonymous", None)


# --- a proxy with credentials -----------------------------------------------------------------


class RecordingProxy:
    """A forward HTTP proxy on 127.0.0.1 that asks for credentials (407) and answers every
    request itself, recording what it was sent. The site's host does not exist: a page that
    loads proves the traffic went through here."""

    def __init__(self, username: str, password: str) -> None:
        self.expected = "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()
        self.requests: list[tuple[str, str | None]] = []
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                target = lines[0].split(" ")[1]
                headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
                auth = headers.get("proxy-authorization")
                self.requests.append((target, auth))
                if auth != self.expected:
                    body = b"proxy authentication required"
                    writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"\r\n"
                                 + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                else:
                    body = f"<h1>via proxy: {target}</h1>".encode()
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                                 + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def test_traffic_goes_through_the_proxy_with_credentials(caplog) -> None:
    caplog.set_level(logging.DEBUG)
    password = "s3cret-proxy-pass-91"
    proxy = RecordingProxy("ada", password)
    port = await proxy.start()
    settings = ProxySettings(server=f"http://127.0.0.1:{port}", username="ada", password=password)
    try:
        async with await _launch(browser_options=BrowserOptions(proxy=settings)) as sh:
            await sh.page.goto("http://shop.stagehand-test.invalid/cart")
            heading = await sh.page.inner_text("h1")
            snapshot = await sh.snapshot()
    finally:
        await proxy.stop()
    assert heading == "via proxy: http://shop.stagehand-test.invalid/cart"
    assert "via proxy" in snapshot.tree
    # The browser first asked without credentials, got the 407, then sent them.
    sent = [auth for target, auth in proxy.requests if target.endswith("/cart")]
    assert sent[0] is None and proxy.expected in sent
    # Credentials never reach a log record or a repr.
    assert password not in caplog.text and password not in repr(settings) and password not in repr(BrowserOptions(proxy=settings))


# --- a Playwright server ------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def playwright_server():
    """``playwright run-server`` from the installed package's driver, on 127.0.0.1 (one per module).
    ``--unsafe`` lets the client name the executable (Debian's Chromium) in its launch options."""
    port = _free_port()
    # The whole process group is stopped at the end: terminating only the Python process left
    # its Node driver (the actual server) running after the suite.
    with process_group(
        [sys.executable, "-m", "playwright", "run-server", "--port", str(port), "--host", "127.0.0.1", "--unsafe"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    ) as process:
        line = process.stdout.readline()
        assert "Listening on" in line, line
        yield f"ws://127.0.0.1:{port}/"


LAUNCH_HEADERS = {"x-playwright-launch-options": json.dumps(
    {"executablePath": CHROMIUM_EXECUTABLE, "args": CHROMIUM_ARGS, "headless": True})}


async def test_connect_to_a_playwright_server_and_drive_a_page(playwright_server, server, cross_server) -> None:
    recorder = Recorder()
    options = BrowserOptions(locale="fr-FR", extra_http_headers={"X-Through": "server"},
                             allowed_domains=[f"127.0.0.1:{server.port}"])
    with server.route("/record", recorder.page):
        async with await Stagehand.connect(ws_endpoint=playwright_server, headers=LAUNCH_HEADERS,
                                           browser_options=options) as sh:
            await sh.page.goto(server.url("forms.html"))
            snapshot = await sh.snapshot()
            box = next(e for e in snapshot.elements if e.role == "textbox")
            await sh.act(Action(selector=f"xpath={box.xpath}", method="fill", arguments=["typed remotely"]))
            assert await sh.page.locator(f"xpath={box.xpath}").input_value() == "typed remotely"
            await sh.page.goto(server.url("record"))
            assert await sh.page.evaluate("navigator.language") == "fr-FR"
            with cross_server.recording("/grab", Response.html("<title>hostile</title>")) as hostile:
                with pytest.raises(Exception, match="ERR_BLOCKED_BY_CLIENT"):  # BrowserOptions(allowed_domains=...)
                    await sh.page.goto(cross_server.url("grab"))
            assert hostile == [] and [b.kind for b in sh.blocked_requests] == ["navigation"]
    assert recorder.seen[0]["x-through"] == "server"


async def test_connect_distinguishes_cdp_from_a_playwright_server(playwright_server) -> None:
    with pytest.raises(InvalidArgumentError, match="exactly one of cdp_url"):
        await Stagehand.connect()
    with pytest.raises(InvalidArgumentError, match="exactly one of cdp_url"):
        await Stagehand.connect("http://127.0.0.1:9", ws_endpoint=playwright_server)
    with pytest.raises(ConfigurationError, match="use Stagehand.connect\\(cdp_url"):
        await Stagehand.connect(ws_endpoint="http://127.0.0.1:9222")
    with pytest.raises(InvalidArgumentError, match=r"connect\(ws_endpoint=...\) only"):
        await Stagehand.connect("http://127.0.0.1:9", browser_options=BrowserOptions(locale="de-DE"))


# --- typed errors for bad values ----------------------------------------------------------------


@pytest.mark.parametrize(("make", "message"), [
    (lambda: BrowserOptions(timezone_id="Mars/Olympus_Mons"), "not an IANA time zone"),
    (lambda: BrowserOptions(locale="not a locale"), "not a language tag"),
    (lambda: Geolocation(latitude=91, longitude=0), "latitude"),
    (lambda: Geolocation(latitude=0, longitude=-181), "longitude"),
    (lambda: BrowserOptions(viewport={"width": 0, "height": 10}), "viewport"),
    (lambda: BrowserOptions(extra_http_headers={"X-Bad": "a\r\nInjected: 1"}), "single-line"),
    (lambda: BrowserOptions(extra_http_headers={"bad name": "x"}), "not a valid HTTP header name"),
    (lambda: BrowserOptions(user_agent=""), "user_agent"),
    (lambda: BrowserOptions(storage_state="/nonexistent/state.json"), "is not a file"),
    (lambda: BrowserOptions(storage_state={"cookies": []}, user_data_dir="/tmp/x"), "exclude each other"),
    (lambda: ProxySettings(server="ftp://proxy:21"), "not a proxy address"),
    (lambda: ProxySettings(server="http://ada:hunter22@proxy:3128"), "credentials in the URL"),
    (lambda: ProxySettings(server="http://proxy:3128", username="ada"), "both username= and password="),
    (lambda: BrowserOptions(allowed_domains="example.com"), "list of patterns"),
    (lambda: BrowserOptions(allowed_domains=["https://"]), "names no host"),
    (lambda: BrowserOptions(allowed_domains=[42]), "not a pattern string"),
])
def test_bad_values_are_typed_errors(make, message) -> None:
    with pytest.raises(InvalidArgumentError, match=message) as caught:
        make()
    assert "hunter22" not in str(caught.value)


async def test_launch_rejects_a_viewport_given_twice() -> None:
    with pytest.raises(InvalidArgumentError, match="viewport is given twice"):
        await Stagehand.launch(viewport={"width": 800, "height": 600},
                               browser_options=BrowserOptions(viewport={"width": 900, "height": 600}))
    with pytest.raises(InvalidArgumentError, match="BrowserOptions"):
        await Stagehand.launch(browser_options={"locale": "de-DE"})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="allowed_domains is given twice"):
        await Stagehand.launch(allowed_domains=["example.com"], browser_options=BrowserOptions(allowed_domains=["a.test"]))
    with pytest.raises(InvalidArgumentError, match="names no host"):  # before connecting anywhere
        await Stagehand.connect("http://127.0.0.1:9", allowed_domains=["http://"])


def test_good_values_pass_and_map_to_playwright_options() -> None:
    options = BrowserOptions(timezone_id="UTC", locale="en-GB", geolocation=Geolocation(latitude=1, longitude=2),
                             proxy=ProxySettings(server="socks5://127.0.0.1:1080", bypass=".internal"))
    context = options.context_options()
    assert context["permissions"] == ["geolocation"] and context["timezone_id"] == "UTC"
    assert options.proxy is not None and options.proxy.to_playwright() == {"server": "socks5://127.0.0.1:1080", "bypass": ".internal"}
