"""Nothing in the library depends on which path built the snapshot (issue 13, item 6).

The same page, loaded in a browser the test launched and wrapped with ``Stagehand(page)`` and in
one ``Stagehand.launch()`` made, gives the very same snapshot: the outline with its ids (so the
agent's page signature and the ids a model names), the XPath and URL maps (what the action
resolver and the cache identity check read), the records, the vision boxes' element list and
the DOM-confidence score (which decides whether vision kicks in).
"""

from __future__ import annotations

import pytest

from stagehand_py import Snapshot, Stagehand, measure_dom_confidence
from stagehand_py._operations._heal import identity_in
from stagehand_py._secrets import VariableSet
from stagehand_py._vision._annotate import actionable_ids
from stagehand_py.agent.hygiene import page_signature

from .conftest import load

PAGES = ["forms.html", "shadow.html", "closed_frames.html", "cross_site.html", "frames/outer.html", "aria.html",
         "vision/toolbar.html"]


async def _both(context, pw, server, path: str) -> list[tuple[Snapshot, Snapshot]]:
    """(wrapped, launched) snapshots of ``path``: a cold one, then a warm one."""
    wrapped_page = await context.new_page()
    await load(wrapped_page, server.url(path))  # the user's page: loaded before the Stagehand existed
    pairs = []
    # The launched one: its own Chromium, with the session's Playwright driver (not a Node process per test).
    async with Stagehand(wrapped_page) as wrapped, await Stagehand.launch(_playwright=pw) as launched:
        await load(launched.page, server.url(path))
        for _ in range(2):  # the warm one: the per-document ids stay put on both paths
            pairs.append((await wrapped.snapshot(confidence=True), await launched.snapshot(confidence=True)))
    return pairs


@pytest.mark.parametrize("path", PAGES)
async def test_a_wrapped_page_and_a_launched_one_give_the_same_snapshot(context, pw, server, path) -> None:
    for wrapped, launched in await _both(context, pw, server, path):
        assert wrapped.tree == launched.tree  # ids included: no normalising
        assert dict(wrapped.xpath_map) == dict(launched.xpath_map)
        assert dict(wrapped.url_map) == dict(launched.url_map)
        assert wrapped.elements == launched.elements
        assert wrapped.dom_confidence is not None and wrapped.dom_confidence == launched.dom_confidence
        assert page_signature(wrapped.url, wrapped.tree) == page_signature(launched.url, launched.tree)
        assert actionable_ids(wrapped.tree) == actionable_ids(launched.tree)
        for element in wrapped.elements:
            if element.actionable:
                selector = f"xpath={element.xpath}"
                assert identity_in(wrapped, selector, VariableSet.of(None)) == identity_in(launched, selector, VariableSet.of(None)) is not None


async def test_control_the_comparison_sees_one_changed_line(context, pw, server) -> None:
    """Control: one extra button on one side changes the signature and the element list."""
    (wrapped, launched), _ = await _both(context, pw, server, "forms.html")
    assert page_signature(wrapped.url, wrapped.tree) == page_signature(launched.url, launched.tree)
    page = await context.new_page()
    await load(page, server.url("forms.html"))
    await page.evaluate("document.body.insertAdjacentHTML('beforeend', '<button>Extra</button>')")
    async with Stagehand(page) as changed:
        other = await changed.snapshot(confidence=True)
    assert page_signature(other.url, other.tree) != page_signature(launched.url, launched.tree)
    assert actionable_ids(other.tree) != actionable_ids(launched.tree)


async def test_a_page_overriding_built_ins_cannot_forge_the_confidence_score(context, server) -> None:
    """The score is measured in the snapshot's own world, like the outline: a page that hides
    every element from its own getComputedStyle/getBoundingClientRect gets its true score."""
    page = await context.new_page()
    await load(page, server.url("vision/toolbar.html"))
    async with Stagehand(page) as sh:
        honest = (await sh.snapshot(confidence=True)).dom_confidence
        await page.evaluate("""() => {
            Element.prototype.getBoundingClientRect = () => ({ x: 0, y: 0, width: 0, height: 0, top: 0, left: 0, right: 0, bottom: 0 });
            window.getComputedStyle = () => ({ display: 'none', visibility: 'hidden', getPropertyValue: () => '' });
            Element.prototype.getAttribute = () => 'forged';
        }""")
        tampered = (await sh.snapshot(confidence=True)).dom_confidence
        forged = (await measure_dom_confidence(page)).score  # control: the page's own world is fooled
    assert tampered == honest
    assert forged != honest
