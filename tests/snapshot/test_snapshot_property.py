"""Property: on any DOM we can generate, the snapshot does not raise and every id's XPath
leads to exactly that node (checked by the independent CDP oracle)."""

from __future__ import annotations

import html
import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stagehand_py.browser._cdp import PageTargets

from ._oracle import check_xpath_map
from .conftest import backend_ids

# Names the HTML parser accepts, including ones XPath cannot spell as a plain name test.
TAGS = ["div", "span", "p", "button", "a", "ul", "li", "section", "label", "input", "b",
        "x-widget", "custom-élément", "foo.bar", "x:y", "data-1", "svg"]
texts = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=0, max_size=12)
_counter = itertools.count()


def _element(tag: str, children: list[str], text_before: str) -> str:
    body = html.escape(text_before) + "".join(children)
    if tag == "input":
        return f"<input aria-label='{html.escape(text_before or 'field')}'>"
    if tag == "a":
        return f"<a href='/x{next(_counter)}'>{body}</a>"
    if tag == "svg":
        return f"<svg width='10' height='10'><circle r='3' cx='5' cy='5'></circle><text>{html.escape(text_before)}</text></svg>"
    return f"<{tag}>{body}</{tag}>"


def nodes(depth: int) -> st.SearchStrategy[str]:
    leaf = st.one_of(texts.map(html.escape), st.builds(_element, st.sampled_from(TAGS), st.just([]), texts))
    if depth <= 0:
        return leaf
    inner = st.lists(nodes(depth - 1), max_size=4)
    return st.one_of(
        leaf,
        st.builds(_element, st.sampled_from(TAGS), inner, texts),
        # declarative shadow roots, open and closed, with light children that may be slotted
        st.builds(
            lambda mode, shadow, light: f"<shadow-host><template shadowrootmode='{mode}'>{''.join(shadow)}<slot></slot></template>{''.join(light)}</shadow-host>",
            st.sampled_from(["open", "closed"]), inner, inner,
        ),
        # same-process iframes with their own document
        st.builds(lambda inside: f"<iframe srcdoc=\"{html.escape('<body>' + ''.join(inside) + '</body>', quote=True)}\"></iframe>", inner),
    )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(body=st.lists(nodes(3), min_size=1, max_size=5))
async def test_random_doms_snapshot_and_keep_the_xpath_contract(sh, page, server, body) -> None:
    document = "<!doctype html><html><head><title>gen</title></head><body>" + "".join(body) + "</body></html>"
    await page.route("**/generated.html", lambda route: route.fulfill(body=document, content_type="text/html; charset=utf-8"))
    await page.goto(server.url("generated.html"))
    for frame in page.frames:
        await frame.wait_for_load_state()
    snapshot = await sh.snapshot()
    targets = await PageTargets.for_page(page)
    try:
        failures = await check_xpath_map(targets, dict(snapshot.xpath_map), await backend_ids(sh, snapshot))
    finally:
        await targets.close()
    assert not failures, document + "\n" + "\n".join(failures[:10])
    await page.unroute("**/generated.html")
