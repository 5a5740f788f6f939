"""``Stagehand(page, allowed_domains=...)``: the guard belongs to the Stagehand, not to the agent.

A script that calls only ``act``, ``observe`` or ``extract`` (or drives the page itself with
``page.goto``) on a Stagehand given ``allowed_domains`` is held to those hosts: the hostile page
on the allowed host opens a new tab whose redirect chain ends on the hostile host (``localhost``,
another port) and asks the browser to prefetch from it with speculation rules; the first call
installs the guard (the Stagehand was never entered), and nothing reaches the hostile host. Each
runs on both page kinds; the control, the same Stagehand without ``allowed_domains``, shows the
attack reaching the hostile host. Then: an agent's ``allowed_domains`` narrows the Stagehand's and
never widens it, and every way out of a run or a Stagehand (an error, ``close()``) takes its
guard with it.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable

import pytest
from _server import Request, Response
from agent._script import AgentScript, call

from stagehand_py import InvalidArgumentError, Stagehand
from stagehand_py.testing import FunctionLLM

from .test_redirect_hops import _sentinel_js, hops, sentinel  # noqa: F401  (fixtures)

BUTTON = "Open the partner offer"


@pytest.fixture
def grabbed(cross_server):
    """What the hostile host received: the ``v`` of each request to ``/grab``."""
    hits: list[str] = []

    def grab(req: Request) -> Response:
        hits.append(req.query.get("v", ""))
        return Response.html("<title>hostile</title><p>you reached the hostile host</p>")

    with cross_server.route("/grab", grab):
        yield hits


@pytest.fixture
def attack_site(server, cross_server, hops, grabbed):  # noqa: F811
    """An allowed page whose ``attack()`` (its button, or called later) asks for a speculative
    prefetch from the hostile host and adds the sentinel (an allowed prefetch chain the remover
    cannot reach, which arrives once the browser has had the page's rules), and whose
    ``openTab()`` opens a new tab whose three-302 chain ends on the hostile host (after the
    prefetch: the browser leaves a page hidden behind a new tab its speculation rules)."""
    rules = json.dumps({"prefetch": [{"source": "list", "urls": [cross_server.url("grab?v=speculation")]}]})
    popup = hops["chain"](3, cross_server.url("grab?v=popup"))
    html = (f"<!doctype html><title>Offers</title><h1>Offers</h1><button onclick='attack()'>{BUTTON}</button>"
            "<script>function attack() { const s = document.createElement('script'); s.type = 'speculationrules';"
            f" s.text = {json.dumps(rules)}; document.head.append(s); {_sentinel_js(hops, server)} }}"
            f" function openTab() {{ window.open({json.dumps(popup)}); }}</script>")
    with server.route("/offers", lambda req: Response.html(html)):
        yield server.url("offers")


def _model():
    def answer(request) -> dict:
        if request.purpose == "extract":
            return {"data": {"extraction": "one offer"}, "instruction_satisfied": True}
        text = "\n".join(str(m.content) for m in request.messages)
        found = [{"element_id": m, "description": f"button: {BUTTON}", "method": "click", "arguments": []}
                 for m in re.findall(rf"\[(\d+-\d+)\] button: {BUTTON}", text)[:1]]
        return {"elements": found, "opens_options": False}

    return FunctionLLM(answer)


async def _until(page, done: Callable[[], bool], rounds: int = 160) -> None:
    """Wait for ``done()`` (a server or the guard recording an event), checking every 0.25 s."""
    for _ in range(rounds):
        if done():
            return
        await page.wait_for_timeout(250)


VERBS = ["act", "observe", "extract", "page.goto"]
CASES = [(verb, guarded, kind) for verb in VERBS for guarded, kind in
         [(True, "wrapped"), (True, "launched"), (False, "wrapped")]]


@pytest.mark.parametrize(("verb", "guarded", "page_kind"), CASES,
                         ids=[f"{v}-{'guarded' if g else 'control-unguarded'}-{k}" for v, g, k in CASES])
async def test_a_script_of_verbs_is_held_to_the_allowed_hosts(new_stagehand, server, cross_server, attack_site, grabbed,
                                                              sentinel, hops, verb: str, guarded: bool) -> None:  # noqa: F811
    options = {"allowed_domains": [f"127.0.0.1:{server.port}"]} if guarded else {}
    sh = await new_stagehand(model=_model(), **options)
    page = sh.page
    await page.goto(attack_site)  # the user's own navigation, before any call: nothing guarded yet
    if verb == "act":
        assert (await sh.act(f"click {BUTTON}")).success  # the click runs the attack
    else:
        if verb == "observe":
            assert len(await sh.observe(f"the {BUTTON} button")) == 1
        elif verb == "extract":
            assert await sh.extract("what is offered") == {"extraction": "one offer"}
        else:
            await sh.__aenter__()  # entered: the guard is in place before the caller's own navigation
            await page.goto(attack_site)
        await page.evaluate("attack()")  # the page's script attacks later on
    blocked = lambda kind: [b for b in sh.blocked_requests if b.kind == kind]  # noqa: E731
    # Guarded: the sentinel arrives once the browser had the page's rules (a prefetch let through
    # would have come first); the control: the prefetch arrives.
    await _until(page, lambda: bool(sentinel) if guarded else "speculation" in grabbed)
    await page.evaluate("openTab()")
    if verb == "page.goto":  # last: the page is left on an error page, or on the hostile host
        with pytest.raises(Exception, match="ERR_BLOCKED_BY_CLIENT") if guarded else contextlib.nullcontext():
            await page.goto(hops["chain"](3, cross_server.url("grab?v=navigation")))
    if guarded:
        await _until(page, lambda: bool(blocked("popup")))  # the new tab's chain was stopped
        assert sentinel and grabbed == []
        assert [b.url for b in blocked("popup")] == [cross_server.url("grab?v=popup")]
        assert {b.url for b in blocked("speculation")} == {cross_server.url("grab?v=speculation")}
        if verb == "page.goto":
            assert [b.url for b in blocked("navigation")] == [cross_server.url("grab?v=navigation")]
    else:
        wanted = {"speculation", "popup"} | ({"navigation"} if verb == "page.goto" else set())
        await _until(page, lambda: wanted <= set(grabbed))
        assert wanted <= set(grabbed), grabbed  # the control: every attack reaches the hostile host
        assert sh.blocked_requests == []



# --- an agent's allowed_domains narrow the Stagehand's, never widen them ------------------------


@pytest.fixture
def partner_page(server, cross_server):
    """An allowed page with a link to the hostile host (``/grab?v=link``)."""
    html = f"<!doctype html><title>Home</title><a href='{cross_server.url('grab?v=link')}'>Partner site</a>"
    with server.route("/home", lambda req: Response.html(html)):
        yield server.url("home")


NARROWING = [("narrowed", "wrapped"), ("narrowed", "launched"), ("wider", "wrapped"), ("wider", "launched"),
             ("control-not-narrowed", "wrapped")]


@pytest.mark.parametrize(("how", "page_kind"), NARROWING, ids=[f"{h}-{k}" for h, k in NARROWING])
async def test_an_agent_narrows_the_stagehands_domains_and_never_widens_them(new_stagehand, server, cross_server,
                                                                          partner_page, grabbed, how: str) -> None:
    home, partner = f"127.0.0.1:{server.port}", f"localhost:{cross_server.port}"
    # narrowed: the Stagehand allows both hosts, the run only home; wider: the run names the
    # partner host too, which the Stagehand does not allow; the control: the run adds nothing.
    stagehand_set = [home] if how == "wider" else [home, partner]
    run_set = {"narrowed": [home], "wider": [home, partner], "control-not-narrowed": None}[how]
    script = AgentScript([lambda s: call("act", element_id=s.id("link", "Partner site")),
                          call("done", message="looked at the partner")])
    sh = await new_stagehand(model=script, allowed_domains=stagehand_set)
    await sh.page.goto(partner_page)
    # verify=False: this is the guard's test; a blocked link leaves the page on the browser's error
    # page, where the done checks would (rightly) bounce "looked at the partner" for one more turn.
    result = await sh.agent(allowed_domains=run_set, verify=False).execute("visit the partner", max_steps=4)
    link = cross_server.url("grab?v=link")
    if how == "control-not-narrowed":
        assert grabbed == ["link"] and result.evidence.blocked == []  # the Stagehand's set lets it through
        return
    assert grabbed == []
    assert [(b.kind, b.url) for b in result.evidence.blocked] == [("navigation", link)]
    assert [(b.kind, b.url) for b in sh.blocked_requests] == [("navigation", link)]
    # After the run only the Stagehand's own set holds: the partner host again where it allows it.
    response = await sh.page.goto(cross_server.url("grab?v=after"), wait_until="commit") if how == "narrowed" else None
    assert (response is not None and response.ok and grabbed == ["after"]) if how == "narrowed" else grabbed == []


@pytest.mark.parametrize("stagehand_guarded", [False, True], ids=["run-guard", "stagehand-guard-narrowed"])
async def test_a_run_that_cannot_start_takes_its_guard_with_it(new_stagehand, server, cross_server, grabbed,
                                                              stagehand_guarded: bool) -> None:
    """``replay=True`` without a cache directory is refused before the run starts; the run's guard
    (its own, or its narrowing of the Stagehand's) is gone after it: the page reaches the partner host."""
    home, partner = f"127.0.0.1:{server.port}", f"localhost:{cross_server.port}"
    sh = await new_stagehand(model=AgentScript([]), **({"allowed_domains": [home, partner]} if stagehand_guarded else {}))
    await sh.page.goto(server.url("index.html"))
    with pytest.raises(InvalidArgumentError, match="replay=True needs"):
        await sh.agent(allowed_domains=[home]).execute("anything", replay=True)
    response = await sh.page.goto(cross_server.url("grab?v=after-error"))
    assert response is not None and response.ok and grabbed == ["after-error"]
    assert sh.blocked_requests == []


async def test_close_takes_the_guard_away_from_the_users_page(page, server, cross_server, grabbed) -> None:
    """A wrapped page is the user's: after ``close()`` it is no longer routed (the control: the
    same navigation refused while the Stagehand was open)."""
    async with Stagehand(page, allowed_domains=[f"127.0.0.1:{server.port}"]) as sh:
        with pytest.raises(Exception, match="ERR_BLOCKED_BY_CLIENT"):
            await page.goto(cross_server.url("grab?v=open"))
        await page.wait_for_url("chrome-error://chromewebdata/")  # committed after goto() raised
        assert [b.url for b in sh.blocked_requests] == [cross_server.url("grab?v=open")]
    response = await page.goto(cross_server.url("grab?v=closed"))
    assert response is not None and response.ok and grabbed == ["closed"]


# --- the header while a run narrows the set: never more than both sets admit ---------------------

SETS = [
    (["127.0.0.1"], ["127.0.0.1:8000"]),
    (["*.example.com", "127.0.0.1"], ["*.shop.example.com", "localhost"]),
    (["https://*.example.com"], ["a.example.com", "example.com"]),
    (["a?c.example"], ["ab*.example"]),  # an overlap no glob states: left out
    (["*"], ["example.org:8443"]),
]
URLS = ["http://127.0.0.1:8000/", "http://127.0.0.1:9000/", "http://localhost/", "https://a.example.com/",
        "http://a.example.com/", "https://x.shop.example.com/", "http://example.com/", "http://abc.example/", "http://abd.example/",
        "https://example.org:8443/", "https://example.org/"]


def _as_strings(patterns) -> list[str]:
    return [f"{scheme + '://' if scheme else ''}{host}{':' + port if port else ''}" for scheme, host, port in patterns]


@pytest.mark.parametrize(("first", "second"), SETS, ids=["+".join(a + b) for a, b in SETS])
def test_the_narrowed_header_admits_no_more_than_both_sets(first: list[str], second: list[str]) -> None:
    from stagehand_py.browser._guard import url_allowed
    from stagehand_py.browser._guard._policy import Policy, intersection, parse_pattern

    policy = Policy()
    policy.add(first)
    policy.add(second)
    header = _as_strings(policy.header_patterns())
    for url in URLS:
        both = url_allowed(url, first) and url_allowed(url, second)
        assert not url_allowed(url, header) or both, (url, header)  # never more than both
        assert policy.allows(url) is both  # the routes apply both sets exactly
    # Where one pattern plainly contains the other the overlap is kept, not dropped.
    assert _as_strings(intersection([parse_pattern("127.0.0.1")], [parse_pattern("127.0.0.1:8000")])) == ["127.0.0.1:8000"]
    # The control: the union of the two sets (what a "wider" run would add) admits more.
    assert any(url_allowed(url, first + second) and not (url_allowed(url, first) and url_allowed(url, second))
               for url in URLS)
