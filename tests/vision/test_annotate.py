"""Annotated and plain screenshots on real pages: boxes where the elements are, numbers that
resolve to the right elements, determinism, size caps."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from stagehand_py._actions import resolve_element
from stagehand_py._stagehand import Stagehand
from stagehand_py._vision import actionable_ids, annotated_screenshot, page_screenshot
from stagehand_py._vision._image import PALETTE


async def _snapshot(page):
    async with Stagehand(page) as sh:
        return await sh.snapshot()


async def _element_box(page, snapshot, element_id: str) -> dict[str, float]:
    handle = await resolve_element(page, "xpath=" + snapshot.xpath_map[element_id], timeout=15)
    box = await handle.bounding_box()
    await handle.dispose()
    assert box is not None
    return box


async def test_boxes_sit_on_the_elements_bounding_boxes(page, server) -> None:
    await page.goto(server.url("frames/outer.html"))
    for frame in page.frames:
        await frame.wait_for_load_state()
    snapshot = await _snapshot(page)
    shot = await annotated_screenshot(page, snapshot)
    assert shot.scale == 1.0 and shot.media_type == "image/png"
    in_frames = [b for b in shot.boxes if "iframe" in snapshot.xpath_map[b.element_id]]
    assert in_frames, "the page has buttons inside iframes; they must be boxed too"
    image = Image.open(io.BytesIO(shot.data)).convert("RGB")
    for box in shot.boxes:
        expected = await _element_box(page, snapshot, box.element_id)
        assert box.x == pytest.approx(expected["x"], abs=0.5) and box.y == pytest.approx(expected["y"], abs=0.5)
        assert box.width == pytest.approx(expected["width"], abs=0.5) and box.height == pytest.approx(expected["height"], abs=0.5)
        # The outline is drawn on the element's edge, in the box's colour.
        left_edge = (round(box.x), round(box.y + box.height / 2))
        assert image.getpixel(left_edge) == PALETTE[(box.number - 1) % len(PALETTE)], box


async def test_numbers_follow_the_outline_and_resolve_to_the_right_elements(page, server) -> None:
    await page.goto(server.url("vision/toolbar.html"))
    snapshot = await _snapshot(page)
    shot = await annotated_screenshot(page, snapshot)
    assert list(shot.numbers) == [1, 2, 3, 4, 5, 6]
    assert list(shot.numbers.values()) == actionable_ids(snapshot.tree)
    actions = []
    for number in shot.numbers:
        element_id = shot.element_id(number)
        assert snapshot.line_for(element_id) is not None
        handle = await resolve_element(page, "xpath=" + snapshot.xpath_map[element_id], timeout=15)
        actions.append(await handle.get_attribute("data-action"))
        await handle.dispose()
    assert actions == ["new", "open", "save", "cut", "undo", "help"]
    # Clicking the element behind box 3 is clicking "save".
    handle = await resolve_element(page, "xpath=" + snapshot.xpath_map[shot.element_id(3)], timeout=15)
    await handle.click()
    assert await page.text_content("#status") == "save"


async def test_same_page_state_same_image_and_boxes_and_scrolling_moves_them(page, docs_server) -> None:
    await page.set_viewport_size({"width": 800, "height": 600})
    await page.goto(docs_server.url("library/json.html"))
    snapshot = await _snapshot(page)
    first = await annotated_screenshot(page, snapshot)
    second = await annotated_screenshot(page, snapshot)
    assert first.data == second.data and first.boxes == second.boxes
    # Only on-screen elements get boxes, clipped to the viewport.
    assert 0 < len(first.boxes) < len(actionable_ids(snapshot.tree))
    assert all(b.x >= 0 and b.y >= 0 and b.x + b.width <= 800 and b.y + b.height <= 600 for b in first.boxes)
    assert await page.evaluate("window.scrollTo(0, 900), window.scrollY") > 0
    scrolled = await annotated_screenshot(page, snapshot)
    assert scrolled.boxes != first.boxes


async def test_large_viewports_are_downscaled_and_byte_capped(page, server) -> None:
    await page.set_viewport_size({"width": 1600, "height": 1200})
    await page.goto(server.url("vision.html"))
    snapshot = await _snapshot(page)
    shot = await annotated_screenshot(page, snapshot, max_side=640)
    assert (shot.width, shot.height) == (640, 480) and shot.scale == pytest.approx(0.4)
    full = await annotated_screenshot(page, snapshot)
    assert full.width * full.height <= 1_150_000 and full.scale < 1
    assert [b.x for b in shot.boxes] == [b.x for b in full.boxes]  # boxes stay in CSS pixels
    tiny = await annotated_screenshot(page, snapshot, max_bytes=6_000)
    assert len(tiny.data) <= 6_000 and tiny.width < full.width


async def test_plain_screenshot_of_a_region(page, server) -> None:
    await page.goto(server.url("vision.html"))
    chart = await page_screenshot(page, selector="#chart")
    assert chart.width == 320 and chart.height in (160, 161) and chart.boxes == ()  # 161: a fractional offset
    whole = await page_screenshot(page)
    assert (whole.width, whole.height) == (1280, 720)
    image = Image.open(io.BytesIO(chart.data)).convert("RGB")
    assert image.getpixel((40, 120)) != (255, 255, 255)  # inside the January bar: pixels, not DOM
