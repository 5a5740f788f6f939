"""Pins the facts the rest of the suite relies on: the servers, the browser fixtures, and the
Chromium behaviours (out-of-process iframes, the CBOR depth limit) the assets were built for."""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request

import pytest
from _server import ASSETS, SLOW_ITEMS, Response
from playwright.async_api import Error as PlaywrightError


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


# --- servers, no browser --------------------------------------------------------------------


def test_servers_are_distinct_sites_on_loopback(server, cross_server):
    assert server.prefix == f"http://127.0.0.1:{server.port}/"
    assert cross_server.prefix == f"http://localhost:{cross_server.port}/"
    assert server.port != cross_server.port
    assert server.server_address[0] == cross_server.server_address[0] == "127.0.0.1"


def test_html_templates_name_both_origins(server, cross_server):
    status, body = _get(server.url("cross_site.html"))
    assert status == 200
    assert f'src="{cross_server.origin}/frames/cross_child.html"' in body
    assert "{{" not in body
    # The localhost server fills the same values in, whichever server serves the page.
    _, links = _get(cross_server.url("links.html"))
    assert f'href="{server.origin}/products.html"' in links


def test_no_escape_from_the_assets_folder(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("GET", "/../_server.py")
    resp = conn.getresponse()
    body = resp.read().decode()
    conn.close()
    assert resp.status == 404
    assert "StaticServer" not in body


def test_slow_endpoint_waits(server):
    start = time.monotonic()
    status, body = _get(server.url("slow?ms=300"))
    elapsed = time.monotonic() - start
    assert status == 200
    assert json.loads(body) == {"slept_ms": 300, "items": SLOW_ITEMS}
    assert 0.3 <= elapsed < 3


def test_dynamic_route_lives_only_inside_with(server):
    with server.route("/api/ping", lambda req: Response.json({"q": req.query.get("q")})):
        assert _get(server.url("api/ping?q=hi")) == (200, '{"q": "hi"}')
    assert _get(server.url("api/ping"))[0] == 404


def test_failing_route_answers_500(server):
    def boom(req):
        raise ValueError("bad route")

    with server.route("/boom", boom):
        status, body = _get(server.url("boom"))
    assert (status, body) == (500, "ValueError: bad route")


# --- browser fixtures -----------------------------------------------------------------------


async def test_page_loads_forms(page, server):
    await page.goto(server.url("forms.html"))
    assert await page.title() == "Forms"
    assert await page.get_by_label("Username").count() == 1
    await page.select_option("#country", label="Germany")
    assert await page.input_value("#country") == "de"


async def test_each_test_gets_a_fresh_context(page, context, browser):
    assert page.context is context
    assert context in browser.contexts
    assert len(context.pages) == 1


async def test_login_form_posts_to_echo(page, server):
    await page.goto(server.url("forms.html"))
    await page.fill("#username", "ada")
    await page.click("#submit")
    await page.wait_for_url("**/echo")
    echoed = json.loads(await page.inner_text("body"))
    assert echoed["method"] == "POST"
    assert "username=ada" in echoed["body"]


async def test_nested_same_origin_frames_three_deep(page, server):
    await page.goto(server.url("frames/outer.html"))
    inner = page.frame_locator("#middle-frame").frame_locator("#inner-frame")
    await inner.locator("#inner-button").click()
    assert await inner.locator("#inner-button").text_content() == "Inner clicked"
    assert [f.url.rsplit("/", 1)[-1] for f in page.frames] == [
        "outer.html",
        "middle.html",
        "inner.html",
    ]


async def test_cross_site_child_is_out_of_process(page, context, server, cross_server):
    await page.goto(server.url("cross_site.html"))
    await page.frame_locator("#cross-frame").locator("#cross-button").wait_for()
    child = next(f for f in page.frames if f.url.startswith(cross_server.origin))
    # Playwright grants a CDP session to a frame only when it is its own target (an OOPIF).
    session = await context.new_cdp_session(child)
    result = await session.send(
        "Runtime.evaluate", {"expression": "document.title", "returnByValue": True}
    )
    assert result["result"]["value"] == "Cross-site child"
    await session.detach()


async def test_same_origin_child_is_not_its_own_target(page, context, server):
    # The contrast that makes the test above mean something.
    await page.goto(server.url("frames/outer.html"))
    middle = page.frame(url=lambda u: u.endswith("middle.html"))
    assert middle is not None
    with pytest.raises(PlaywrightError, match="does not have a separate CDP session"):
        await context.new_cdp_session(middle)


async def test_shadow_roots_open_and_closed(page, context, server):
    await page.goto(server.url("shadow.html"))
    roots = await page.evaluate(
        """() => ({
            open: !!document.querySelector('#open-host').shadowRoot,
            nested: !!document.querySelector('#open-host').shadowRoot
                        .querySelector('inner-widget').shadowRoot,
            closed: document.querySelector('#closed-host').shadowRoot,
        })"""
    )
    assert roots == {"open": True, "nested": True, "closed": None}
    # Page script cannot reach the closed root, but CDP with pierce sees inside it.
    cdp = await context.new_cdp_session(page)
    doc = await cdp.send("DOM.getDocument", {"depth": -1, "pierce": True})
    kinds = {}

    def walk(node):
        for root in node.get("shadowRoots", []):
            if root["shadowRootType"] == "user-agent":  # inputs carry their own; not ours
                continue
            kinds[node["attributes"][node["attributes"].index("id") + 1]] = root["shadowRootType"]
        for child in node.get("children", []) + node.get("shadowRoots", []):
            walk(child)

    walk(doc["root"])
    assert kinds == {"open-host": "open", "inner-widget": "open", "closed-host": "closed"}
    # The page-level hook is how tests check what happened inside the closed root.
    assert await page.evaluate("window.__closedRootState()") == {
        "button": "Closed shadow button",
        "input": "",
    }


async def test_dynamic_list_loads_from_slow_endpoint(page, server):
    await page.goto(server.url("dynamic.html"))
    await page.click("#load")
    assert await page.inner_text("#load-status") == "loading"
    await page.wait_for_function("document.querySelector('#load-status').textContent === 'loaded'")
    assert await page.locator("#items li").all_inner_texts() == SLOW_ITEMS


async def test_deep_page_breaks_full_get_document(page, context, server):
    await page.goto(server.url("deep.html"))
    depth = await page.evaluate(
        "() => { let n = document.querySelector('#deep-button'), d = 0;"
        " while (n) { d++; n = n.parentElement; } return d; }"
    )
    assert depth > 1200
    cdp = await context.new_cdp_session(page)
    with pytest.raises(PlaywrightError, match="CBOR: stack limit exceeded"):
        await cdp.send("DOM.getDocument", {"depth": -1, "pierce": True})
    # A bounded depth still answers, so a capture can walk the tree in pieces.
    doc = await cdp.send("DOM.getDocument", {"depth": 50, "pierce": True})
    assert doc["root"]["nodeName"] == "#document"


ASSET_PAGES = sorted(p.relative_to(ASSETS).as_posix() for p in ASSETS.rglob("*.html"))


@pytest.mark.parametrize("path", ASSET_PAGES)
async def test_asset_loads_cleanly(page, server, path):
    """Every page has a title, throws no script error and fetches nothing that fails."""
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"script error: {exc}"))
    page.on("requestfailed", lambda req: problems.append(f"failed: {req.url}"))
    page.on(
        "response",
        lambda resp: problems.append(f"{resp.status}: {resp.url}") if resp.status >= 400 else None,
    )
    await page.goto(server.url(path), wait_until="load")
    assert await page.title()
    assert problems == []
