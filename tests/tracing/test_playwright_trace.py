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

import asyncio
import json
import zipfile
from pathlib import Path

import pytest
from _canary import CANARY, ENCODINGS, echo_site, found_in, plain_fill_trace
from playwright._impl._driver import compute_driver_executable, get_driver_env

from stagehand_py import Action, AmbiguousSelectorError, SecretInTraceError, Stagehand
from stagehand_py.browser._recording import is_recording


@pytest.fixture
def hostile_site(server, cross_server):
    with echo_site(server, cross_server) as url:
        yield url


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
    await sh.page.get_by_text("Signed in as").wait_for()  # the answer to the post is in


async def test_control_a_plain_playwright_trace_keeps_the_canary_in_every_form(context, hostile_site, tmp_path) -> None:
    """The control: a trace the user records of a plain Playwright fill holds every encoding."""
    counts = found_in(await plain_fill_trace(context, hostile_site, tmp_path / "control.zip"))
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
    # Two elements for one selector fail the call at once, whatever the machine's load (a selector
    # that matches nothing is polled for until a deadline: a race with the clock).
    await sh.page.set_content("<button>Go</button><button>Go</button>")
    with pytest.raises(AmbiguousSelectorError, match="matches 2 elements"):
        await sh.act(Action(selector="xpath=/html/body/button", method="click"))
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


async def test_playwrights_own_trace_viewer_opens_our_trace_and_lists_our_verbs(context, browser, hostile_site,
                                                                                tmp_path) -> None:
    """``playwright show-trace`` (its server, the page opened in the session's Chromium) loads the
    zip we rewrote and lists our verbs as its steps."""
    path = tmp_path / "trace.zip"
    async with Stagehand(await context.new_page(), trace="on", trace_path=path) as sh:
        await sh.page.goto(hostile_site)
        await sh.act(FILL, variables={"pw": CANARY})
    node, cli = compute_driver_executable()
    server = await asyncio.create_subprocess_exec(node, cli, "show-trace", "-h", "127.0.0.1", "-p", "0", str(path),
                                                  stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                                                  env={**get_driver_env(), "BROWSER": "true"})  # serve only, open nothing
    try:
        address = ""
        while "http://" not in address:
            address = (await asyncio.wait_for(server.stdout.readline(), 60)).decode()
        viewer = await browser.new_page()
        try:
            await viewer.goto(address.split("Listening on ", 1)[-1].strip())
            await viewer.get_by_text('act: fill "%pw%" "textbox: Password" [0-3]').wait_for(timeout=60_000)
            listed = await viewer.locator(".tree-view-entry").all_inner_texts()
        finally:
            await viewer.close()
    finally:
        server.terminate()
        await server.wait()
    assert any(entry.startswith('act: fill "%pw%"') for entry in listed) and not any(CANARY in e for e in listed)
