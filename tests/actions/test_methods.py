"""Every method on a real page, asserting its effect on the DOM."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from stagehand_py import (
    Action,
    ActionFailedError,
    ElementNotFoundError,
    PageClosedError,
    StagehandTimeoutError,
)
from stagehand_py._actions import execute_action

# Counts events per element id into window.events["id:type"].
COUNTER = """<script>
  window.events = {};
  for (const type of ['click','dblclick','contextmenu','auxclick','mouseenter','keydown','input','change']) {
    document.addEventListener(type, (e) => {
      const id = (e.target && e.target.id) || '?';
      const key = id + ':' + type;
      window.events[key] = (window.events[key] || 0) + 1;
      if (type === 'auxclick' || type === 'click' || type === 'contextmenu') window.events[id + ':button'] = e.button;
      if (type === 'keydown') (window.keys = window.keys || []).push((e.ctrlKey ? 'Control+' : '') + e.key);
    }, true);
  }
</script>"""


async def run(page, selector: str, method: str = "click", *arguments: str, **options) -> None:
    await execute_action(page, Action(selector=selector, method=method, arguments=list(arguments)), **options)


async def events(page) -> dict[str, int]:
    return await page.evaluate("window.events")


async def test_click_buttons_double_click_and_hover(page) -> None:
    await page.set_content(f"<button id='b' oncontextmenu='return false'>b</button><div id='h'>hover me</div>{COUNTER}")
    await run(page, "xpath=/html[1]/body[1]/button[1]")
    await run(page, "xpath=/html[1]/body[1]/button[1]", "click", "right")
    await run(page, "xpath=/html[1]/body[1]/button[1]", "click", "middle")
    counts = await events(page)
    assert counts["b:click"] == 1 and counts["b:contextmenu"] == 1 and counts["b:auxclick"] == 2
    await run(page, "xpath=/html[1]/body[1]/button[1]", "double_click")
    assert (await events(page))["b:dblclick"] == 1
    await run(page, "xpath=/html[1]/body[1]/div[1]", "hover")
    assert (await events(page))["h:mouseenter"] == 1


async def test_fill_clears_first_and_type_goes_key_by_key(page) -> None:
    await page.set_content(f"<input id='a' value='old text'><textarea id='t'>x</textarea><div id='ce' contenteditable></div>{COUNTER}")
    await run(page, "/html[1]/body[1]/input[1]", "fill", "new")
    assert await page.input_value("#a") == "new"
    await run(page, "/html[1]/body[1]/textarea[1]", "type", "abc")
    assert await page.input_value("#t") == "xabc"  # type appends at the caret, after focusing
    assert (await events(page))["t:keydown"] == 3
    await run(page, "/html[1]/body[1]/div[1]", "fill", "rich")
    assert await page.text_content("#ce") == "rich"


async def test_press_keys_and_chords_on_the_focused_target(page) -> None:
    await page.set_content(f"<input id='a' value='hello'><input id='b'>{COUNTER}")
    await run(page, "/html[1]/body[1]/input[1]", "press", "Control+A")
    await run(page, "/html[1]/body[1]/input[1]", "press", "Backspace")
    assert await page.input_value("#a") == ""
    await run(page, "/html[1]/body[1]/input[2]", "press", "Enter")
    assert await page.evaluate("document.activeElement.id") == "b"
    assert await page.evaluate("window.keys") == ["Control+Control", "Control+A", "Backspace", "Enter"]


async def test_select_option_by_label_then_value(page, server) -> None:
    await page.goto(server.url("forms.html"))
    select = "xpath=/html[1]/body[1]/form[1]/select[1]"
    await run(page, select, "select_option", "Germany")
    assert await page.input_value("#country") == "de"
    await run(page, select, "select_option", "jp")
    assert await page.input_value("#country") == "jp"
    await run(page, select, "select_option", "  united   STATES ")
    assert await page.input_value("#country") == "us"
    with pytest.raises(ActionFailedError) as info:
        await run(page, select, "select_option", "Atlantis")
    assert "'Choose a country', 'United States', 'Germany', 'Japan', 'Brazil'" in str(info.value)
    with pytest.raises(ActionFailedError, match="needs a native <select>.*is a <textarea>"):
        await run(page, "xpath=/html[1]/body[1]/form[1]/textarea[1]", "select_option", "x")


async def test_check_uncheck_and_radio(page, server) -> None:
    await page.goto(server.url("forms.html"))
    await run(page, "css=#remember", "check")
    assert await page.is_checked("#remember")
    await run(page, "css=#remember", "check")  # already checked: stays checked
    assert await page.is_checked("#remember")
    await run(page, "css=#remember", "uncheck")
    assert not await page.is_checked("#remember")
    await run(page, "xpath=/html[1]/body[1]/form[1]/fieldset[1]/label[3]/input[1]", "check")
    assert await page.is_checked("input[value=team]") and not await page.is_checked("input[value=free]")
    with pytest.raises(ActionFailedError, match="check on css=#username failed"):
        await run(page, "css=#username", "check")


async def test_set_input_files(page, server, tmp_path: Path) -> None:
    await page.goto(server.url("forms.html"))
    picture = tmp_path / "avatar.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n")
    await run(page, "css=#avatar", "set_input_files", str(picture))
    assert await page.evaluate("document.querySelector('#avatar').files[0].name") == "avatar.png"


SCROLL_PAGE = """<style>body{margin:0} #box{height:200px;overflow:auto} #box div{height:2000px}
                 #tall{height:5000px}</style>
<div id='box'><div><p id='deep'>inside</p></div></div><div id='tall'></div><button id='end'>end</button>"""


async def test_scroll_methods_on_an_element_and_the_page(page) -> None:
    await page.set_viewport_size({"width": 800, "height": 600})
    await page.set_content(SCROLL_PAGE)
    box, html, body = "/html[1]/body[1]/div[1]", "/html[1]", "/html[1]/body[1]"
    half = await page.evaluate("(b => (b.scrollHeight - b.clientHeight) / 2)(document.querySelector('#box'))")
    await run(page, box, "scroll_to", "50%")
    assert await page.evaluate("document.querySelector('#box').scrollTop") == pytest.approx(half, abs=1)
    await run(page, box, "scroll_by", "0", "-100")
    assert await page.evaluate("document.querySelector('#box').scrollTop") == pytest.approx(half - 100, abs=1)
    await run(page, box, "next_chunk")  # one client height: 200px
    assert await page.evaluate("document.querySelector('#box').scrollTop") == pytest.approx(half + 100, abs=1)
    await run(page, box, "prev_chunk")
    await run(page, box, "prev_chunk")
    assert await page.evaluate("document.querySelector('#box').scrollTop") == pytest.approx(half - 300, abs=1)
    # A non-scrollable child scrolls its scrollable ancestor.
    await run(page, "/html[1]/body[1]/div[1]/div[1]/p[1]", "scroll_to", "0%")
    assert await page.evaluate("document.querySelector('#box').scrollTop") == 0
    assert await page.evaluate("scrollY") == 0

    max_y = await page.evaluate("document.documentElement.scrollHeight - innerHeight")
    await run(page, html, "scroll_to", "100%")
    assert await page.evaluate("scrollY") == pytest.approx(max_y, abs=1)
    await run(page, body, "scroll_to", "50")
    assert await page.evaluate("scrollY") == pytest.approx(max_y / 2, abs=1)
    await run(page, body, "scroll_by", "0", "250px")
    assert await page.evaluate("scrollY") == pytest.approx(max_y / 2 + 250, abs=1)
    await run(page, html, "prev_chunk")
    assert await page.evaluate("scrollY") == pytest.approx(max_y / 2 + 250 - 600, abs=1)
    await run(page, html, "next_chunk")
    assert await page.evaluate("scrollY") == pytest.approx(max_y / 2 + 250, abs=1)

    await run(page, html, "scroll_to", "0%")
    await run(page, "/html[1]/body[1]/button[1]", "scroll_into_view")
    assert await page.evaluate("(() => { const r = document.querySelector('#end').getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; })()")


async def test_scroll_in_the_assets_scroll_page(page, server) -> None:
    await page.goto(server.url("scroll.html"))
    await run(page, "css=#item-3", "next_chunk")  # an item: its list scrolls, not the page
    assert await page.evaluate("document.querySelector('#list').scrollTop") > 0
    assert await page.evaluate("scrollY") == 0


DRAG_PAGE = """<style>div{width:100px;height:100px;margin:20px;background:#ccc}</style>
<div id='src' draggable='true'>drag me</div><div id='dst'>drop here</div>
<div id='knob'>knob</div><div id='slot'>slot</div>
<script>
  window.log = [];
  src.addEventListener('dragstart', e => { e.dataTransfer.setData('text/plain', 'payload'); log.push('dragstart'); });
  dst.addEventListener('dragover', e => e.preventDefault());
  dst.addEventListener('drop', e => { e.preventDefault(); log.push('drop:' + e.dataTransfer.getData('text/plain')); });
  let holding = false;
  knob.addEventListener('mousedown', () => { holding = true; });
  slot.addEventListener('mouseup', () => { if (holding) log.push('mouse-drop'); holding = false; });
</script>"""


async def test_drag_and_drop_by_snapshot_id_and_by_selector(page) -> None:
    await page.set_content(DRAG_PAGE)
    xpath_map = {"0-7": "/html[1]/body[1]/div[2]"}
    await run(page, "/html[1]/body[1]/div[1]", "drag_and_drop", "0-7", xpath_map=xpath_map)
    assert await page.evaluate("window.log") == ["dragstart", "drop:payload"]
    await run(page, "css=#knob", "drag_and_drop", "xpath=/html[1]/body[1]/div[4]")
    assert (await page.evaluate("window.log"))[-1] == "mouse-drop"
    with pytest.raises(ElementNotFoundError, match="'0-99' is not an element id of the snapshot"):
        await run(page, "css=#src", "drag_and_drop", "0-99", xpath_map=xpath_map)
    with pytest.raises(ElementNotFoundError, match="step 3 'section\\[1\\]'"):
        await run(page, "css=#src", "drag_and_drop", "/html[1]/body[1]/section[1]", timeout=0.5)


async def test_refused_actions_become_library_errors(page, server) -> None:
    await page.goto(server.url("forms.html"))
    with pytest.raises(StagehandTimeoutError) as info:
        await run(page, "css=#reset-password", "click", timeout=0.5)  # disabled
    assert "click on css=#reset-password did not finish within 0.5 s" in str(info.value)
    assert isinstance(info.value, TimeoutError) and info.value.__cause__ is not None
    await page.goto(server.url("hidden.html"))
    with pytest.raises(StagehandTimeoutError):
        await run(page, "css=#display-none", "click", timeout=0.5)


async def test_closed_page(page) -> None:
    await page.set_content("<button>x</button>")
    await page.close()
    with pytest.raises(PageClosedError):
        await run(page, "/html[1]/body[1]/button[1]")


async def test_page_closed_during_action(context) -> None:
    page = await context.new_page()
    await page.set_content("<input>")
    typing = asyncio.ensure_future(run(page, "/html[1]/body[1]/input[1]", "type", "x" * 2000))
    await asyncio.sleep(0.3)
    await page.close()
    with pytest.raises(PageClosedError):
        await typing
