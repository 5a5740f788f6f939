"""The agent's tab tools (list_tabs, switch_tab, close_tab) on real tabs, on a wrapped page and a
launched browser, with ``allowed_domains`` covering every tab."""

from __future__ import annotations

import pytest
import pytest_asyncio
from _server import Response

from stagehand_py import Stagehand

from ._script import AgentScript, call


def _start_page(offsite: str) -> str:
    return f"""<title>Start</title><h1>Start</h1>
<a href="/agent-tabs/help" target="_blank">Open help</a>
<button onclick="window.open('{offsite}/products.html')">Open partner site</button>"""


@pytest.fixture
def tab_pages(server, cross_server):
    routes = [
        server.route("/agent-tabs/start", lambda r: Response.html(_start_page(cross_server.origin))),
        server.route("/agent-tabs/help", lambda r: Response.html("<title>Help centre</title><h1>Help centre</h1>")),
    ]
    yield server
    for route in routes:
        route.remove()


@pytest_asyncio.fixture(params=["wrapped", "launched"])
async def make(request, context, pw):
    """A Stagehand on the test's own page, or on a Chromium it launches (with the session's
    Playwright driver: not a Node process per test)."""
    made: list[Stagehand] = []

    async def build(**options) -> Stagehand:
        sh = (Stagehand(await context.new_page(), **options) if request.param == "wrapped"
              else await Stagehand.launch(args=["--disable-quic"], _playwright=pw, **options))
        made.append(sh)
        return sh

    yield build
    for sh in made:
        await sh.close()


async def test_agent_lists_switches_and_closes_tabs_inside_the_allowlist(make, tab_pages, cross_server) -> None:
    script = AgentScript([
        lambda s: call("act", element_id=s.id("link", "Open help")),
        call("list_tabs"),
        call("switch_tab", index=0),
        # A popup to a site outside the allowlist is blocked and closed: it never becomes a tab to use.
        lambda s: call("act", element_id=s.id("button", "Open partner site")),
        call("list_tabs"),
        call("close_tab", index=1),
        call("done", message="looked at the help tab"),
    ])
    sh = await make(model=script)
    first = sh.page
    await first.goto(tab_pages.url("agent-tabs/start"))
    result = await sh.agent(allowed_domains=[f"127.0.0.1:{tab_pages.port}"]).execute("look at the help", max_steps=10)
    assert result.status == "done", result.message
    steps = {s.step: s for s in result.steps}
    assert [s.tool for s in result.steps] == ["act", "list_tabs", "switch_tab", "act", "list_tabs", "close_tab", "done"]
    # After the link the agent was on the new tab (followed), and list_tabs said so.
    listed = steps[2].result
    assert "tab 0: 'Start'" in listed and "tab 1 (current): 'Help centre'" in listed
    assert "now on tab 0" in steps[3].result
    # The state the model saw next step was the start tab again.
    assert "Title: Start" in script.seen[3].text
    # The partner popup was blocked and closed: still two tabs, the allowed ones.
    assert any(b.kind == "popup" or b.url.startswith(cross_server.origin) for b in result.evidence.blocked)
    assert "tab 0 (current): 'Start'" in steps[5].result and cross_server.origin not in steps[5].result
    assert sh.page is first and len(sh.pages) == 1


async def test_switch_to_a_missing_tab_is_a_failed_step_not_a_crash(make, tab_pages) -> None:
    script = AgentScript([call("switch_tab", index=3), call("done", message="ok")])
    sh = await make(model=script)
    await sh.page.goto(tab_pages.url("agent-tabs/start"))
    result = await sh.agent().execute("switch", max_steps=3)
    assert result.steps[0].tool == "switch_tab" and not result.steps[0].ok
    assert "there is no tab 3; 1 tab(s) are open" in result.steps[0].result
