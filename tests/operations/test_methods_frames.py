"""Every executor method reached through observe() -> act(); frames (incl. cross-site) and shadow roots."""

from __future__ import annotations

from pathlib import Path

from stagehand_py import Stagehand
from stagehand_py._actions import install_page_helpers
from stagehand_py.testing import FunctionLLM

from ._ops import element, find_id

PAGE = """<!DOCTYPE html><html><body>
<button id="b">Click me</button>
<button id="d">Double me</button>
<div id="h" role="button" aria-label="Hover me">hover</div>
<label>Fill me <input id="f" value="old"></label>
<label>Type here <textarea id="t">x</textarea></label>
<label>Press here <input id="p"></label>
<label>Pick <select id="s"><option value="a">Apple</option><option value="c">Cherry</option></select></label>
<label><input type="checkbox" id="c1"> Check me</label>
<label><input type="checkbox" id="c2" checked> Uncheck me</label>
<label>Upload <input type="file" id="u"></label>
<div draggable="true" id="src" role="button" aria-label="Drag source">drag</div>
<div id="dst" role="region" aria-label="Drop zone" style="width:100px;height:50px">drop</div>
<ul id="box" aria-label="Scroll box" style="height:80px;overflow:auto">
  <li>one</li><li>two</li><li>three</li><li>four</li><li>five</li><li>six</li><li>seven</li><li>eight</li>
</ul>
<div style="height:2000px"></div>
<button id="far">Far button</button>
<script>
  window.events = {};
  for (const type of ['click','dblclick','mouseenter','keydown','drop']) {
    document.addEventListener(type, (e) => {
      const key = ((e.target && e.target.id) || '?') + ':' + type;
      window.events[key] = (window.events[key] || 0) + 1;
    }, true);
  }
  const src = document.getElementById('src'), dst = document.getElementById('dst');
  src.addEventListener('dragstart', (e) => e.dataTransfer.setData('text/plain', 'x'));
  dst.addEventListener('dragover', (e) => e.preventDefault());
</script></body></html>"""

PLAN = [  # (outline line, method, arguments)
    ("button: Click me", "click", []),
    ("button: Double me", "double_click", []),
    ("button: Hover me", "hover", []),
    ("textbox: Fill me", "fill", ["%word%"]),
    ("textbox: Type here", "type", ["yz"]),
    ("textbox: Press here", "press", ["Enter"]),
    ("combobox: Pick", "select_option", ["Cherry"]),
    ("checkbox: Check me", "check", []),
    ("checkbox: Uncheck me", "uncheck", []),
    ("list: Scroll box", "scroll_to", ["100%"]),
    ("list: Scroll box", "prev_chunk", []),
    ("list: Scroll box", "next_chunk", []),
    ("list: Scroll box", "scroll_by", ["0", "-10"]),
    ("button: Far button", "scroll_into_view", []),
    ("button: Drag source", "drag_and_drop", ["DROP"]),
    ("button: Upload", "set_input_files", ["FILE"]),
]


async def test_every_method_through_observe_then_act(page, tmp_path: Path):
    upload = tmp_path / "avatar.txt"
    upload.write_text("hi")
    await page.set_content(PAGE)

    def model(request):
        drop = find_id(request, "region: Drop zone")
        return {"elements": [
            element(find_id(request, line), method, [drop if a == "DROP" else str(upload) if a == "FILE" else a for a in args])
            for line, method, args in PLAN
        ]}

    sh = Stagehand(page, model=FunctionLLM(model))
    actions = await sh.observe("everything", variables={"word": "new"})
    assert [a.method for a in actions] == [m for _, m, _ in PLAN]
    drag = actions[-2]
    assert drag.arguments[0].startswith("xpath=/html[1]/body[1]/div[")  # the target id became a selector
    scroll_tops = []
    for action in actions:
        result = await sh.act(action, variables={"word": "new"})
        assert result.success and not result.healed, action
        if action.selector.endswith("ul[1]"):
            scroll_tops.append(await page.eval_on_selector("#box", "e => e.scrollTop"))
        if action.method == "scroll_into_view":
            page_scroll = await page.evaluate("window.scrollY")
    ev = await page.evaluate("window.events")
    assert ev["b:click"] == 1 and ev["d:dblclick"] == 1 and ev["h:mouseenter"] >= 1
    assert ev["p:keydown"] == 1 and ev.get("dst:drop") == 1
    assert await page.input_value("#f") == "new" and await page.input_value("#t") == "xyz"
    assert await page.input_value("#s") == "c"
    assert await page.is_checked("#c1") and not await page.is_checked("#c2")
    assert await page.eval_on_selector("#u", "e => e.files[0].name") == "avatar.txt"
    top, after_prev, after_next, after_by = scroll_tops
    assert top > 0 and after_prev < top and after_next > after_prev and after_by == after_next - 10
    assert page_scroll > 1000  # the far button was scrolled into view


async def test_frames_cross_site_frames_and_shadow_roots(page, server, cross_server):
    await install_page_helpers(page)  # what Stagehand.launch() does before navigating (closed roots)
    targets = {
        "frames/outer.html": ("textbox: Inner input", "fill", ["deep"], ("document.querySelector('iframe').contentDocument"
                              ".querySelector('iframe').contentDocument.querySelector('input').value"), "deep"),
        "cross_site.html": ("button: Cross-site button", "click", [], None, None),
        "shadow.html": ("button: Closed shadow button", "click", [], None, None),
    }
    for path, (line, method, args, probe, expected) in targets.items():
        await page.goto(server.url(path))
        sh = Stagehand(page, model=FunctionLLM(lambda r, line=line, method=method, args=args: {
            "elements": [element(find_id(r, line), method, args, line)]}))
        [action] = await sh.observe(f"the {line}")
        result = await sh.act(action)
        assert result.success and not result.healed, path
        if probe:
            assert await page.evaluate(probe) == expected
    # The cross-site frame is out of process: its button's effect is visible in that frame.
    await page.goto(server.url("cross_site.html"))
    sh = Stagehand(page, model=FunctionLLM(lambda r: {"elements": [element(find_id(r, "textbox: Cross-site input"), "fill", ["oopif"])]}))
    await sh.act((await sh.observe("the cross-site input"))[0])
    frame = next(f for f in page.frames if f.url.startswith(cross_server.origin))
    assert await frame.input_value("input") == "oopif"
