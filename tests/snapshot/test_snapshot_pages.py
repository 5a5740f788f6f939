"""The snapshot on real pages: golden outlines, the XPath contract, frames, shadow roots,
deep DOMs, scoping, both CDP transports and the accessibility-tree fallback."""

from __future__ import annotations

import asyncio
import re

import pytest
import pytest_asyncio
from _browser import CHROMIUM_ARGS, CHROMIUM_EXECUTABLE

from stagehand_py import ElementNotFoundError, InvalidArgumentError, PageClosedError, Stagehand
from stagehand_py.browser._cdp import PageTargets

from ._oracle import check_xpath_map
from .conftest import backend_ids, load, normalize_ids

GOLDEN = {
'forms.html': """\
[0-#] body
  [0-#] heading: Sign in
  [0-#] form
    [0-#] StaticText: Username
    [0-#] textbox: Username
    [0-#] StaticText: Password
    [0-#] textbox: Password
    [0-#] label
      [0-#] checkbox: Remember me
      [0-#] StaticText: Remember me
    [0-#] group: Plan
      [0-#] label
        [0-#] radio: Free [checked]
        [0-#] StaticText: Free
      [0-#] label
        [0-#] radio: Pro
        [0-#] StaticText: Pro
      [0-#] label
        [0-#] radio: Team
        [0-#] StaticText: Team
    [0-#] StaticText: Country
    [0-#] combobox: Country value="Choose a country"
      [0-#] option: Choose a country [selected]
      [0-#] option: United States
      [0-#] option: Germany
      [0-#] option: Japan
      [0-#] option: Brazil
    [0-#] StaticText: About you
    [0-#] textbox: About you
    [0-#] StaticText: Avatar
    [0-#] button: Avatar: No file chosen
    [0-#] StaticText: Volume
    [0-#] slider: Volume value="50"
    [0-#] status
      [0-#] StaticText: 50
    [0-#] button: Reset password [disabled]
    [0-#] button: Sign in""",
'links.html': """\
[0-#] body
  [0-#] heading: Links
  [0-#] navigation: Main
    [0-#] list
      [0-#] link: Relative link to forms
      [0-#] link: Absolute link to products
      [0-#] link: Link to the other origin
      [0-#] link: Jump to section 2
      [0-#] link: Company logo
        [0-#] image: Company logo
      [0-#] link: Read the full story
      [0-#] StaticText: Anchor without href
  [0-#] section
    [0-#] heading: Section 1
    [0-#] StaticText: First section.
  [0-#] section
    [0-#] heading: Section 2
    [0-#] StaticText: Second section.""",
'hidden.html': """\
[0-#] body
  [0-#] heading: Hidden content
  [0-#] button: Visible button
  [0-#] button: Off-screen button
  [0-#] button: Zero size button""",
'shadow.html': """\
[0-#] body
  [0-#] heading: Shadow roots
  [0-#] open-card
    [0-#] heading: Slotted title
    [0-#] button: Open shadow button
    [0-#] button: Nested shadow button
    [0-#] StaticText: Slotted title
    [0-#] button: Light DOM button
  [0-#] closed-form
    [0-#] StaticText: Closed input
    [0-#] textbox: Closed input
    [0-#] button: Closed shadow button""",
'frames/outer.html': """\
[0-#] body
  [0-#] heading: Outer
  [0-#] button: Outer button
  [0-#] iframe: Middle frame
    [1-#] body
      [1-#] heading: Middle
      [1-#] button: Middle button
      [1-#] iframe: Inner frame
        [2-#] body
          [2-#] heading: Inner
          [2-#] button: Inner button
          [2-#] StaticText: Inner input
          [2-#] textbox: Inner input""",
'cross_site.html': """\
[0-#] body
  [0-#] heading: Parent page
  [0-#] button: Parent button
  [0-#] iframe: Cross-site frame
    [1-#] body
      [1-#] heading: Cross-site child
      [1-#] button: Cross-site button
      [1-#] StaticText: Cross-site input
      [1-#] textbox: Cross-site input""",
'aria.html': """\
[0-#] body
  [0-#] heading: ARIA widgets
  [0-#] paragraph
    [0-#] StaticText: Last action:
    [0-#] StaticText: none
  [0-#] heading: Tabs
  [0-#] tablist: Account sections
    [0-#] tab: Profile [selected]
    [0-#] tab: Billing
    [0-#] tab: Security
  [0-#] tabpanel: Profile
    [0-#] StaticText: Profile settings
  [0-#] heading: Menu
  [0-#] button: Actions [collapsed]
  [0-#] heading: Custom dropdown
  [0-#] StaticText: Favourite fruit
  [0-#] combobox: Favourite fruit [collapsed]
    [0-#] StaticText: Choose a fruit
  [0-#] heading: Switch
  [0-#] switch: Email notifications
  [0-#] heading: Dialog
  [0-#] button: Delete project""",
}


@pytest.mark.parametrize("path", sorted(GOLDEN))
async def test_golden_outline(sh, page, server, path) -> None:
    await load(page, server.url(path))
    snapshot = await sh.snapshot()
    assert normalize_ids(snapshot.tree) == GOLDEN[path]


CONTRACT_PAGES = [
    "forms.html", "links.html", "hidden.html", "shadow.html", "frames/outer.html", "cross_site.html",
    "aria.html", "scroll.html", "deep.html", "dynamic.html", "products.html", "vision.html",
]


@pytest.mark.parametrize("path", CONTRACT_PAGES)
async def test_every_xpath_resolves_to_exactly_its_node(sh, page, server, path) -> None:
    await load(page, server.url(path))
    snapshot = await sh.snapshot()
    assert snapshot.xpath_map
    assert set(snapshot.xpath_map) == set(snapshot.ids), "every line has an XPath and every XPath a line"
    targets = await PageTargets.for_page(page)
    try:
        failures = await check_xpath_map(targets, dict(snapshot.xpath_map), await backend_ids(sh, snapshot))
    finally:
        await targets.close()
    assert not failures, "\n".join(failures[:20])


async def test_ids_are_stable_between_snapshots_and_across_unrelated_changes(sh, page, server) -> None:
    await load(page, server.url("frames/outer.html"))
    first = await sh.snapshot()
    await page.evaluate("document.body.insertAdjacentHTML('afterbegin', '<button>New one</button>')")
    second = await sh.snapshot()
    new_ids = set(second.ids) - set(first.ids)
    assert len(new_ids) == 1 and "New one" in second.line_for(new_ids.pop())
    assert set(first.ids) <= set(second.ids)
    for element_id in first.ids:
        assert first.line_for(element_id) == second.line_for(element_id)
    # Frame content keeps its frame's ordinal.
    assert {i.split("-")[0] for i in second.ids} == {"0", "1", "2"}


async def test_url_map_holds_absolute_urls_of_links(sh, page, server, cross_server) -> None:
    await load(page, server.url("links.html"))
    snapshot = await sh.snapshot()
    by_name = {snapshot.line_for(i).split(": ", 1)[1]: url for i, url in snapshot.url_map.items()}
    assert by_name["Relative link to forms"] == server.url("forms.html")
    assert by_name["Jump to section 2"] == server.url("links.html") + "#section-2"
    assert by_name["Link to the other origin"].startswith(cross_server.url(""))
    assert all(re.match(r"https?://", url) for url in snapshot.url_map.values())
    assert "Anchor without href" not in " ".join(snapshot.line_for(i) for i in snapshot.url_map)


async def test_cross_site_frame_is_out_of_process_and_inline(sh, page, server) -> None:
    await load(page, server.url("cross_site.html"))
    assert await page.context.new_cdp_session(page.frames[1])  # only OOPIFs get their own session
    snapshot = await sh.snapshot()
    lines = snapshot.tree.split("\n")
    frame_line = next(i for i, line in enumerate(lines) if "iframe: Cross-site frame" in line)
    button_line = next(i for i, line in enumerate(lines) if "button: Cross-site button" in line)
    assert button_line > frame_line
    indent = lambda line: len(line) - len(line.lstrip())  # noqa: E731
    assert indent(lines[button_line]) > indent(lines[frame_line])
    assert lines[button_line].strip().startswith("[1-")


async def test_deep_dom_that_cdp_refuses_in_one_message_is_fetched_in_slices(sh, page, server) -> None:
    await load(page, server.url("deep.html"))
    cdp = await page.context.new_cdp_session(page)
    with pytest.raises(Exception, match="stack limit"):
        await cdp.send("DOM.getDocument", {"depth": -1, "pierce": True})
    snapshot = await sh.snapshot()
    deep_id = next(i for i in snapshot.ids if "Deep button" in snapshot.line_for(i))
    assert snapshot.xpath_map[deep_id].count("/div[") > 500


async def test_password_values_never_appear_other_values_do(sh, page, server) -> None:
    await load(page, server.url("forms.html"))
    await page.get_by_label("Username").fill("ada")
    await page.get_by_label("Password").fill("CANARY-pw-91c2")
    snapshot = await sh.snapshot()
    assert "CANARY-pw-91c2" not in snapshot.tree
    assert re.search(r"textbox: Password \[filled\]", snapshot.tree)
    assert 'textbox: Username value="ada"' in snapshot.tree


async def test_selector_scopes_the_snapshot_to_a_subtree(sh, page, server) -> None:
    await load(page, server.url("frames/outer.html"))
    full = await sh.snapshot()
    for selector in ("css=iframe", "iframe", "xpath=/html/body/iframe", "//iframe"):
        scoped = await sh.snapshot(selector=selector)
        assert "Outer button" not in scoped.tree and "Inner button" in scoped.tree
        assert scoped.tree.split("\n")[0].lstrip().split("]")[1].startswith(" iframe: Middle frame")
        for element_id, xpath in scoped.xpath_map.items():
            assert full.xpath_map[element_id] == xpath  # same ids, same paths as the full snapshot


async def test_selector_errors_are_precise(sh, page, server) -> None:
    await load(page, server.url("forms.html"))
    with pytest.raises(ElementNotFoundError, match="matches no element"):
        await sh.snapshot(selector="#does-not-exist")
    with pytest.raises(InvalidArgumentError, match="not a valid XPATH"):
        await sh.snapshot(selector="xpath=//*[")
    with pytest.raises(InvalidArgumentError, match="empty"):
        await sh.snapshot(selector="  ")


async def test_closed_page_raises_page_closed(context, server) -> None:
    page = await context.new_page()
    await page.goto(server.url("forms.html"))
    stagehand = Stagehand(page)
    await stagehand.snapshot()
    await page.close()
    with pytest.raises(PageClosedError):
        await stagehand.snapshot()
    await stagehand.close()


async def test_launched_browser_uses_the_direct_channel_and_agrees_with_the_relay(sh, page, server,
                                                                                 launched_stagehand) -> None:
    await load(page, server.url("shadow.html"))
    relay = await sh.snapshot()
    # The session's own ``Stagehand.launch()`` (its page, not one beside it), not a Chromium per test.
    launched = launched_stagehand
    assert launched._session.direct is not None
    await load(launched.page, server.url("shadow.html"))
    direct = await launched.snapshot()
    assert normalize_ids(direct.tree) == normalize_ids(relay.tree)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def computed_role_browser(pw):
    """A Chromium exposing Chrome's computedRole (the flag we used to launch with), once for the
    file: each test opens its own context in it."""
    browser = await pw.chromium.launch(executable_path=CHROMIUM_EXECUTABLE,
                                       args=[*CHROMIUM_ARGS, "--enable-blink-features=ComputedAccessibilityInfo"])
    yield browser
    await browser.close()


@pytest.mark.parametrize("path", ["forms.html", "aria.html", "shadow.html"])
async def test_the_outline_does_not_depend_on_chromes_own_accessibility_flag(browser, computed_role_browser, server,
                                                                          path) -> None:
    """Roles and names are ours: a browser exposing Chrome's computedRole (the flag we used to
    launch with) and one without it (the session's, launched with the test flags alone) give the
    same outline."""
    trees = []
    for each, exposes_computed_role in ((browser, False), (computed_role_browser, True)):
        context = await each.new_context()
        try:
            page = await context.new_page()
            assert await page.evaluate("'computedRole' in Element.prototype") == exposes_computed_role
            await load(page, server.url(path))
            async with Stagehand(page) as stagehand:
                trees.append(normalize_ids((await stagehand.snapshot()).tree))
        finally:
            await context.close()
    assert trees[0] == trees[1] == GOLDEN[path]


async def test_concurrent_snapshots_do_not_interfere(sh, page, server) -> None:
    await load(page, server.url("cross_site.html"))
    results = await asyncio.gather(*(sh.snapshot() for _ in range(4)))
    assert len({r.tree for r in results}) == 1
