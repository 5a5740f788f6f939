"""``@pytest.mark.stagehand(allowed_domains=...)``: the plugin's ``stagehand`` fixture is held to
those hosts from before the test body runs (the library's one guard), run the way a user runs it
(pytest in a subprocess on a scratch project). The control, a test without the marker, reaches
the hostile host (``localhost``, another port); a bad pattern is a typed error."""

from __future__ import annotations

import urllib.parse

import pytest
from _server import Request, Response

from .test_plugin import run

TESTS = '''
import os
import pytest

ALLOWED, CHAIN, CONTROL = os.environ["SH_ALLOWED"], os.environ["SH_CHAIN"], os.environ["SH_CONTROL"]

@pytest.mark.stagehand(allowed_domains=[ALLOWED])
async def test_guarded(stagehand):
    with pytest.raises(Exception, match="ERR_BLOCKED_BY_CLIENT"):
        await stagehand.page.goto(CHAIN)  # the test's own navigation, no call made before it
    assert [(b.kind, b.url.split("?")[-1]) for b in stagehand.blocked_requests] == [("navigation", "v=marker")]

async def test_control(stagehand):
    assert (await stagehand.page.goto(CONTROL)).ok

@pytest.mark.stagehand(allowed_domains="not a list")
async def test_bad_pattern(stagehand):
    pass
'''


def test_the_marker_holds_the_fixtures_context_to_its_domains(pytester: pytest.Pytester, server, cross_server) -> None:
    hits: list[str] = []

    def hop(req: Request) -> Response:
        n = int(req.query["n"])
        nxt = server.url(f"plugin-hop?n={n - 1}") if n > 1 else cross_server.url("grab?v=marker")
        return Response(302, "", headers={"Location": nxt})

    def grab(req: Request) -> Response:
        hits.append(req.query.get("v", ""))
        return Response.html("<title>hostile</title>")

    pytester.makepyfile(test_guarded=TESTS)
    with server.route("/plugin-hop", hop), cross_server.route("/grab", grab):
        result = run(pytester, "-q", SH_ALLOWED=f"127.0.0.1:{server.port}", SH_CHAIN=server.url("plugin-hop?n=3"),
                     SH_CONTROL=cross_server.url("grab?" + urllib.parse.urlencode({"v": "control"})))
    result.assert_outcomes(passed=2, errors=1)
    assert "InvalidArgumentError" in result.stdout.str() and "list of patterns" in result.stdout.str()
    assert hits == ["control"]  # the guarded test's chain never arrived; the control's did
