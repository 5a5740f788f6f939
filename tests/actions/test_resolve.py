"""Selector resolution on real pages: nested frames, a cross-site OOPIF, open and closed shadow roots."""

from __future__ import annotations

import pytest

from stagehand_py import Action, AmbiguousSelectorError, ElementNotFoundError, InvalidArgumentError
from stagehand_py._actions import execute_action, install_page_helpers, resolve_element

INNER = "/html[1]/body[1]/iframe[1]/html[1]/body[1]/iframe[1]/html[1]/body[1]"


async def _text(page, selector: str) -> str:
    element = await resolve_element(page, selector, timeout=15)
    try:
        return (await element.text_content() or "").strip()
    finally:
        await element.dispose()


async def _frame_by_url(page, part: str):
    for frame in page.frames:
        if part in frame.url:
            return frame
    raise AssertionError(f"no frame with {part!r} in {[f.url for f in page.frames]}")


async def test_three_nested_same_origin_frames(page, server) -> None:
    await page.goto(server.url("frames/outer.html"))
    await (await _frame_by_url(page, "inner.html")).wait_for_load_state()
    assert await _text(page, "xpath=/html[1]/body[1]/button[1]") == "Outer button"
    assert await _text(page, "xpath=/html[1]/body[1]/iframe[1]/html[1]/body[1]/button[1]") == "Middle button"
    await execute_action(page, Action(selector=f"xpath={INNER}/button[1]"))
    await execute_action(page, Action(selector=f"{INNER}/input[1]", method="fill", arguments=["deep"]))
    inner = await _frame_by_url(page, "inner.html")
    assert await inner.text_content("#inner-button") == "Inner clicked"
    assert await inner.input_value("#inner-input") == "deep"


async def test_cross_site_out_of_process_frame(page, server, cross_server) -> None:
    await page.goto(server.url("cross_site.html"))
    child = await _frame_by_url(page, cross_server.origin)
    await child.wait_for_load_state()
    path = "xpath=/html[1]/body[1]/iframe[1]/html[1]/body[1]"
    await execute_action(page, Action(selector=f"{path}/button[1]"))
    await execute_action(page, Action(selector=f"{path}/input[1]", method="type", arguments=["oopif"]))
    assert await child.text_content("#cross-button") == "Cross clicked"
    assert await child.input_value("#cross-input") == "oopif"
    # Really out of process: the child has its own CDP target, so a page session cannot see its DOM.
    session = await page.context.new_cdp_session(page)
    tree = await session.send("Page.getFrameTree")
    assert all(cross_server.origin not in f["frame"]["url"] for f in tree["frameTree"].get("childFrames", []))
    await session.detach()


async def test_open_shadow_roots_nested(page, server) -> None:
    await page.goto(server.url("shadow.html"))
    assert await _text(page, "/html[1]/body[1]/open-card[1]/button[1]") == "Light DOM button"
    await execute_action(page, Action(selector="xpath=/html[1]/body[1]/open-card[1]//button[1]"))
    await execute_action(page, Action(selector="xpath=/html[1]/body[1]/open-card[1]//inner-widget[1]//button[1]"))
    texts = await page.evaluate(
        """() => { const r = document.querySelector('#open-host').shadowRoot;
                   return [r.querySelector('#open-button').textContent,
                           r.querySelector('inner-widget').shadowRoot.querySelector('button').textContent]; }"""
    )
    assert texts == ["Open clicked", "Nested clicked"]


async def test_closed_shadow_root_after_install(page, server) -> None:
    await install_page_helpers(page)
    await page.goto(server.url("shadow.html"))
    host = "xpath=/html[1]/body[1]/closed-form[1]"
    await execute_action(page, Action(selector=f"{host}//input[1]", method="fill", arguments=["inside"]))
    await execute_action(page, Action(selector=f"{host}//button[1]"))
    assert await page.evaluate("window.__closedRootState()") == {"button": "Closed clicked", "input": "inside"}
    # text() resolves to the parent element: the label inside the closed root.
    assert await _text(page, f"{host}//label[1]/text()[1]") == "Closed input"


async def test_closed_shadow_root_attached_before_install_is_reached(page, server) -> None:
    await page.goto(server.url("shadow.html"))
    await install_page_helpers(page)  # too late for the root that already exists: DevTools still finds it
    await execute_action(page, Action(selector="xpath=/html[1]/body[1]/closed-form[1]//button[1]"))
    assert (await page.evaluate("window.__closedRootState()"))["button"] == "Closed clicked"


async def test_a_missing_step_inside_a_closed_root_explains_itself(page, server) -> None:
    await page.goto(server.url("shadow.html"))
    with pytest.raises(ElementNotFoundError) as info:
        await resolve_element(page, "xpath=/html[1]/body[1]/closed-form[1]//button[9]", timeout=0.2)
    message = str(info.value)
    assert "step 4 'button[9]'" in message and "/html[1]/body[1]/closed-form[1]" in message
    assert "observe again" in message


async def test_install_is_idempotent(page, server) -> None:
    await install_page_helpers(page)
    await page.goto(server.url("shadow.html"))
    before = await page.evaluate("() => { window.__attach = Element.prototype.attachShadow; return Element.prototype.attachShadow.name; }")
    await install_page_helpers(page)
    for frame in page.frames:  # evaluating the script itself again is a no-op too
        from stagehand_py._actions._js import load_js

        await frame.evaluate(load_js("_shadow_init.js"))
    assert before == "attachShadow"
    assert await page.evaluate("window.__attach === Element.prototype.attachShadow")
    assert await page.evaluate("Object.keys(window).every(k => !k.includes('stagehand'))")


async def test_shadow_host_with_iframe_and_svg(page) -> None:
    await page.set_content(
        """<x-host></x-host>
        <svg width="100" height="100"><circle cx="50" cy="50" r="40" onclick="this.setAttribute('data-hit','1')"/></svg>
        <script>
          const root = document.querySelector('x-host').attachShadow({mode: 'open'});
          root.innerHTML = '<iframe srcdoc="<button onclick=&quot;this.textContent=\\'ok\\'&quot;>in</button>"></iframe>';
        </script>"""
    )
    frame = page.frames[1]
    await frame.wait_for_load_state()
    await execute_action(page, Action(selector="/html[1]/body[1]/x-host[1]//iframe[1]/html[1]/body[1]/button[1]"))
    assert await frame.text_content("button") == "ok"
    await execute_action(page, Action(selector="/html[1]/body[1]/svg[1]/circle[1]"))
    assert await page.get_attribute("circle", "data-hit") == "1"


async def test_not_found_names_the_failing_step(page) -> None:
    await page.set_content("<div><button>a</button></div>")
    with pytest.raises(ElementNotFoundError) as info:
        await resolve_element(page, "xpath=/html[1]/body[1]/div[1]/button[2]", timeout=0.2)
    assert str(info.value).startswith(
        "xpath=/html[1]/body[1]/div[1]/button[2]: step 4 'button[2]' matched nothing under /html[1]/body[1]/div[1] "
        "(it has 1 <button> child)"
    )
    assert info.value.selector == "xpath=/html[1]/body[1]/div[1]/button[2]"
    with pytest.raises(ElementNotFoundError, match=r"step 3 'iframe\[1\]' matched nothing") as info:
        await execute_action(page, Action(selector=f"{INNER}/button[1]", method="hover"), timeout=0.1)
    assert info.value.method == "hover" and info.value.selector == f"{INNER}/button[1]"


async def test_polls_for_elements_that_appear_soon(page) -> None:
    await page.set_content("<div></div><script>setTimeout(() => document.querySelector('div').innerHTML = '<p>late</p>', 300)</script>")
    assert await _text(page, "/html[1]/body[1]/div[1]/p[1]") == "late"


async def test_ordinary_xpath_and_playwright_selectors(page) -> None:
    await page.set_content("<button id='x'>one</button><button>two</button><p>text <b>bold</b></p>")
    assert await _text(page, "xpath=//button[@id='x']") == "one"
    assert await _text(page, "(//button)[2]") == "two"
    assert await _text(page, "//p/text()") == "text bold"  # a text node resolves to its parent
    assert await _text(page, "css=#x") == "one"
    assert await _text(page, "text=two") == "two"
    with pytest.raises(AmbiguousSelectorError, match="matches 2 elements"):
        await resolve_element(page, "xpath=//button", timeout=1)
    with pytest.raises(AmbiguousSelectorError):
        await resolve_element(page, "button", timeout=1)
    with pytest.raises(InvalidArgumentError, match="not a valid xpath"):
        await resolve_element(page, "xpath=//button[", timeout=1)
    with pytest.raises(ElementNotFoundError, match="matched nothing"):
        await resolve_element(page, "css=#nope", timeout=0.2)
    with pytest.raises(InvalidArgumentError):
        await resolve_element(page, "  ", timeout=0.2)


async def test_keys_and_scrolling_inside_a_cross_site_frame(page, server, cross_server) -> None:
    await page.goto(server.url("cross_site.html"))
    child = await _frame_by_url(page, cross_server.origin)
    await child.wait_for_load_state()
    await child.evaluate("document.body.style.height = '3000px'")
    body = "xpath=/html[1]/body[1]/iframe[1]/html[1]/body[1]"
    await execute_action(page, Action(selector=f"{body}/input[1]", method="fill", arguments=["abc"]))
    await execute_action(page, Action(selector=f"{body}/input[1]", method="press", arguments=["Backspace"]))
    assert await child.input_value("#cross-input") == "ab"
    await execute_action(page, Action(selector=body, method="nextChunk"))  # the frame's page scrolls, not ours
    assert await child.evaluate("scrollY") == await child.evaluate("innerHeight")
    assert await page.evaluate("scrollY") == 0


async def test_snapshot_step_forms_for_foreign_namespaces_and_non_blank_text(page) -> None:
    await page.set_content(
        "<div><svg><foreignObject width='50' height='50'><p>x</p></foreignObject></svg>"
        "<p>  <b>a</b> second <i>i</i> third </p></div>"
    )
    div = "/html[1]/body[1]/div[1]"
    assert await _text(page, f"{div}/*[local-name()='svg'][1]/*[local-name()='foreignObject'][1]/p[1]") == "x"
    assert await _text(page, f"{div}/svg[1]/foreignObject[1]/p[1]") == "x"
    assert await _text(page, f"{div}/p[1]/text()[3]") == "a second i third"
    assert await _text(page, f"{div}/p[1]/text()[normalize-space()][2]") == "a second i third"
    with pytest.raises(ElementNotFoundError, match=r"step 5 'text\(\)\[normalize-space\(\)\]\[3\]'.*it has 2 text nodes"):
        await resolve_element(page, f"{div}/p[1]/text()[normalize-space()][3]", timeout=0)
