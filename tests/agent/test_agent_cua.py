"""Computer-use mode: scripted coordinate actions on a real page, scaling, safety checks,
and the translations of the providers' native actions."""

from __future__ import annotations

import re

import pytest

from stagehand_py import Stagehand
from stagehand_py.agent.modes.cua import (
    CuaAction,
    ScreenGeometry,
    from_anthropic,
    from_openai,
    normalise_key,
)
from stagehand_py.agent.modes.cua._actions import png_size
from stagehand_py.llm import ImagePart

from ._script import AgentScript, call

SECRET = "cua-CANARY-51aa"


def test_geometry_scales_both_ways_and_clamps():
    g = ScreenGeometry(1280, 720, 640, 360)
    assert ScreenGeometry.fit((1280, 720), (640, 480)) == 0.5
    assert ScreenGeometry.fit((800, 600), (1024, 768)) == 1.0
    assert g.to_viewport(100, 50) == (200.0, 100.0)
    assert g.to_screen(200, 100) == (100, 50)
    assert g.to_viewport(-5, 9999) == (0.0, 719.0)
    assert g.scroll_to_viewport(0, 150) == (0.0, 300.0)


def test_provider_actions_translate_to_the_internal_protocol():
    assert from_anthropic({"action": "left_click", "coordinate": [10, 20]}) == CuaAction("click", {"x": 10, "y": 20, "button": "left"})
    assert from_anthropic({"action": "right_click", "coordinate": [1, 2]}).args["button"] == "right"
    assert from_anthropic({"action": "double_click", "coordinate": [3, 4]}) == CuaAction("double_click", {"x": 3, "y": 4})
    assert from_anthropic({"action": "type", "text": "hi"}) == CuaAction("type", {"text": "hi"})
    assert from_anthropic({"action": "key", "text": "ctrl+a"}) == CuaAction("keypress", {"keys": ["Control", "a"]})
    assert from_anthropic({"action": "key", "text": "Return"}).args == {"keys": ["Enter"]}
    assert from_anthropic({"action": "scroll", "coordinate": [5, 6], "scroll_direction": "up", "scroll_amount": 2}).args == {
        "x": 5, "y": 6, "scroll_x": 0, "scroll_y": -200}
    assert from_anthropic({"action": "left_click_drag", "start_coordinate": [1, 1], "coordinate": [9, 9]}).args == {
        "path": [{"x": 1, "y": 1}, {"x": 9, "y": 9}]}
    assert from_anthropic({"action": "wait", "duration": 0.5}) == CuaAction("wait", {"ms": 500})
    assert from_openai({"type": "click", "x": 7, "y": 8, "button": "left"}) == CuaAction("click", {"x": 7, "y": 8, "button": "left"})
    assert from_openai({"type": "keypress", "keys": ["CTRL", "SHIFT", "T"]}).args == {"keys": ["Control", "Shift", "t"]}
    assert from_openai({"type": "scroll", "x": 1, "y": 2, "scroll_x": 0, "scroll_y": 300}).args["scroll_y"] == 300
    assert from_openai({"type": "drag", "path": [{"x": 1, "y": 2}, {"x": 3, "y": 4}]}).tool == "drag"
    assert from_openai({"type": "wait"}) == CuaAction("wait", {"ms": 1000})
    assert normalise_key("ESC") == "Escape" and normalise_key("f5") == "F5" and normalise_key("PageDown") == "PageDown"
    with pytest.raises(ValueError):
        from_openai({"type": "teleport"})
    with pytest.raises(ValueError):
        from_anthropic({"action": "left_click", "coordinate": "10,20"})


async def test_cua_clicks_the_right_element_with_scaled_coordinates(page, server):
    await page.set_viewport_size({"width": 1280, "height": 720})
    await page.goto(server.url("agent/cua.html"))
    boxes = {k: await page.locator(f"#{k}").bounding_box() for k in ("target", "twice", "field")}

    def screen_size(seen):
        m = re.search(r"screenshot of the tab, (\d+)x(\d+) pixels", seen.system)
        return int(m.group(1)), int(m.group(2))

    def at(key, action, **extra):
        def step(seen):
            sw, sh = screen_size(seen)
            image = [p for m in seen.request.messages for p in m.content if isinstance(p, ImagePart)]
            assert len(image) == 1 and png_size(image[0].data) == (sw, sh)
            box = boxes[key]
            x = round((box["x"] + box["width"] / 2) * sw / 1280)
            y = round((box["y"] + box["height"] / 2) * sh / 720)
            return call(action, x=x, y=y, **extra)
        return step

    script = AgentScript([
        at("target", "click"),
        at("twice", "double_click"),
        at("field", "click"),
        call("type", text="%query%"),
        call("keypress", keys=["Enter"]),
        lambda s: call("scroll", x=10, y=10, scroll_y=screen_size(s)[1]),
        call("done", message="clicked"),
    ])
    agent = Stagehand(page, model=script).agent(mode="cua", cua_screen=(640, 480))
    result = await agent.execute("Confirm, open, and search", max_steps=10, variables={"query": SECRET})
    assert result.status == "done", result.message
    assert screen_size(script.seen[0]) == (640, 360)  # 1280x720 fitted into 640x480
    log = await page.locator("#log li").all_inner_texts()
    assert log == ["target", "double", f"enter:{SECRET}"]  # never the decoy right next to it
    assert await page.evaluate("scrollY") == 720  # 360 screenshot pixels = 720 CSS pixels
    assert len(result.evidence.screenshots) == 7 and all(len(s.sha256) == 64 for s in result.evidence.screenshots)
    assert SECRET not in result.model_dump_json()
    assert result.steps[3].result == "typed '%query%'"


async def test_cua_drag(page, server):
    await page.set_viewport_size({"width": 800, "height": 600})
    await page.goto(server.url("agent/cua.html"))
    await page.evaluate("""() => {
        window.moves = [];
        document.addEventListener('mousedown', e => moves.push(['down', e.clientX, e.clientY]));
        document.addEventListener('mouseup', e => moves.push(['up', e.clientX, e.clientY]));
    }""")
    script = AgentScript([call("drag", path=[{"x": 100, "y": 100}, {"x": 300, "y": 200}]), call("done", message="ok")])
    await Stagehand(page, model=script).agent(mode="cua", cua_screen=(400, 300)).execute("Drag", max_steps=3)
    assert await page.evaluate("moves") == [["down", 200, 200], ["up", 600, 400]]


async def test_unacknowledged_safety_check_stops_for_review(page, server):
    await page.goto(server.url("agent/cua.html"))
    risky = {**call("click", x=10, y=10), "safety_checks": [{"code": "payment", "message": "This confirms a purchase"}]}
    asked = []

    async def decline(check):
        asked.append(check)
        return False

    script = AgentScript([risky])
    result = await Stagehand(page, model=script).agent(mode="cua", on_safety_check=decline).execute("Buy", max_steps=3)
    assert result.status == "needs_review" and not result.success
    assert [c.code for c in asked] == ["payment"] and "confirms a purchase" in result.message
    assert await page.locator("#log li").count() == 0  # the click did not happen

    script = AgentScript([risky, call("done", message="ok")])
    result = await Stagehand(page, model=script).agent(mode="cua", on_safety_check=lambda c: True).execute("Buy", max_steps=3)
    assert result.status == "done"
