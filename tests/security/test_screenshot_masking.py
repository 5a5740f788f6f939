"""A secret filled into a plain text field through ``variables=`` must not reach a model as
pixels: every screenshot sent to a model masks the fields holding a variable's value with one
solid box. The secret is rendered big and black on white, so an unmasked field is anything but
uniform; the controls send the same screenshot with the value typed without ``variables`` and
find the text there (the check really sees the field's pixels). The text sent with the image
is checked as well: the judge's outline used to carry the value."""

from __future__ import annotations

import io
from typing import Any

import pytest
from PIL import Image

from stagehand_py import Action, Stagehand
from stagehand_py._secrets import VariableSet
from stagehand_py._vision import MASK_COLOR, masked_screenshot, secret_fields
from stagehand_py.llm import ImagePart
from stagehand_py.testing import FunctionLLM, capture_requests

SECRET = "Zq8-WIDE-secret"
PAGE = """<!doctype html><style>
  body { margin: 0; background: #fff }
  #code { position: absolute; left: 40px; top: 40px; width: 700px; height: 90px; border: 0; padding: 0 10px;
          font: 64px monospace; color: #000; background: #fff; outline: none; caret-color: transparent }
  #other { position: absolute; left: 40px; top: 200px; font: 20px sans-serif }
</style><input id=code aria-label="Account code"><input id=other aria-label="Note" value="plain">
<button style="position:absolute;left:40px;top:300px">Save</button>"""
MAGENTA = tuple(int(MASK_COLOR[i : i + 2], 16) for i in (1, 3, 5))


def answer(request: Any) -> dict[str, Any]:
    if request.purpose == "judge":
        return {"verdict": "yes", "reasoning": "the form is there"}
    if request.purpose == "extract":
        return {"data": {"extraction": "a form"}, "instruction_satisfied": True}
    return {"elements": []}


def sent_images(calls: list[Any]) -> list[Image.Image]:
    parts = [p for c in calls for m in c.request.messages if not isinstance(m.content, str)
             for p in m.content if isinstance(p, ImagePart)]
    return [Image.open(io.BytesIO(p.data)).convert("RGB") for p in parts]


async def field_region(page: Any, image: Image.Image) -> Image.Image:
    """The field's box in ``image`` (which may be downscaled), a few pixels inside its edges."""
    box = await page.locator("#code").bounding_box()
    viewport = await page.evaluate("() => innerWidth")
    k = image.width / viewport
    inset = 4
    return image.crop((round((box["x"] + inset) * k), round((box["y"] + inset) * k),
                       round((box["x"] + box["width"] - inset) * k), round((box["y"] + box["height"] - inset) * k)))


def is_masked(region: Image.Image) -> bool:
    """One solid colour, the mask's (a little tolerance: the image may be JPEG-encoded)."""
    extrema = region.getextrema()
    return all(hi - lo <= 12 and abs((hi + lo) / 2 - want) <= 12 for (lo, hi), want in zip(extrema, MAGENTA, strict=True))


def shows_text(region: Image.Image) -> bool:
    """Dark glyph pixels on the white field: the typed value is visible."""
    return sum(region.convert("L").histogram()[:100]) > 200


async def fill(sh: Stagehand, knows_secret: bool) -> None:
    if knows_secret:
        result = await sh.act(Action(selector="#code", method="fill", arguments=["%code%"]), variables={"code": SECRET})
        assert result.success
    else:
        await sh.page.fill("#code", SECRET)
    assert await sh.page.input_value("#code") == SECRET


OPERATIONS = {
    "observe-vision": lambda sh: sh.observe("the save button", vision=True),
    "extract-screenshot": lambda sh: sh.extract("what is on the page?", screenshot=True),
    "evaluate-judge": lambda sh: sh.evaluate("Is there a form?"),
}


@pytest.mark.parametrize("operation", list(OPERATIONS))
@pytest.mark.parametrize("knows_secret", [True, False], ids=["masked", "control-unknown-value"])
async def test_a_screenshot_sent_to_a_model_masks_the_secret_field(new_stagehand, operation: str, knows_secret: bool) -> None:
    sh = await new_stagehand(model=FunctionLLM(answer))
    await sh.page.set_viewport_size({"width": 1280, "height": 720})
    await sh.page.set_content(PAGE)
    await fill(sh, knows_secret)
    with capture_requests() as calls:
        await OPERATIONS[operation](sh)
    images = sent_images(calls)
    assert images, "the operation sent no screenshot"
    text = "\n".join(str(m.content) for c in calls for m in c.request.messages)
    assert (SECRET not in text) if knows_secret else (SECRET in text)  # the text beside it too (the judge's outline)
    for image in images:
        region = await field_region(sh.page, image)
        if knows_secret:
            assert is_masked(region) and not shows_text(region)
        else:
            assert shows_text(region) and not is_masked(region)


async def test_the_helper_masks_echoes_textareas_editables_and_iframes_only(page) -> None:
    await page.set_content(
        PAGE + "<textarea id=ta></textarea><div id=ed contenteditable></div><div id=ro>not editable</div>"
        "<iframe srcdoc=\"<input id=inner>\"></iframe>")
    frame = page.frames[1]
    await frame.wait_for_selector("#inner")
    await page.fill("#code", SECRET.upper())            # a transformed echo counts too
    await page.fill("#ta", f"note: {SECRET} end")       # the value inside longer text
    await page.fill("#ed", SECRET)
    await frame.fill("#inner", SECRET)
    masks = await secret_fields(page, VariableSet.of({"code": SECRET}))
    ids = sorted([await m.get_attribute("id") for m in masks])
    assert ids == ["code", "ed", "inner", "ta"]  # not #other, whose value is no secret
    png = await masked_screenshot(page, VariableSet.of({"code": SECRET}), type="png")
    assert is_masked(await field_region(page, Image.open(io.BytesIO(png)).convert("RGB")))
    shrunk = await masked_screenshot(page, VariableSet.of({"code": SECRET}), type="png", scale="css", downscale=0.5)
    image = Image.open(io.BytesIO(shrunk)).convert("RGB")
    assert image.width == 640 and is_masked(await field_region(page, image))
    assert await secret_fields(page, VariableSet.of({"other": "no such value on the page"})) == []


async def test_no_variables_means_a_plain_screenshot_without_a_page_round_trip() -> None:
    class Page:
        def __getattr__(self, name: str) -> Any:
            if name != "screenshot":
                raise AssertionError(f"touched page.{name}")

            async def screenshot(**options: Any) -> bytes:
                assert "mask" not in options
                return b"png"
            return screenshot

    assert await secret_fields(Page(), None) == [] and await secret_fields(Page(), VariableSet.of({"x": ""})) == []
    assert await masked_screenshot(Page(), VariableSet.of({}), type="png") == b"png"


@pytest.mark.parametrize("mode", ["dom", "cua"])
@pytest.mark.parametrize("knows_secret", [True, False], ids=["masked", "control-unknown-value"])
async def test_the_agents_screenshots_mask_the_secret_field(new_stagehand, mode: str, knows_secret: bool) -> None:
    """DOM mode's step screenshots (use_vision) and its screenshot tool (the self-check's verdict
    reads the page's text, no screenshot); CUA mode's screenshots, downscaled to the model's
    screen after masking."""
    from stagehand_py._prompts.expect import NO_LINE
    from tests.agent._script import AgentScript, call

    steps = [call("screenshot"), call("done", message="ok")] if mode == "dom" else [call("done", message="ok")]
    script = AgentScript(steps, others={"agent_verdict": lambda r: {"evidence": NO_LINE, "verdict": "yes"}})
    sh = await new_stagehand(model=script)
    await sh.page.set_viewport_size({"width": 1280, "height": 720})
    await sh.page.set_content(PAGE)
    await sh.page.fill("#code", SECRET)  # typed earlier; the agent is handed the same value
    options: dict[str, Any] = {"use_vision": True, "self_check": True} if mode == "dom" else {"cua_screen": (640, 480)}
    with capture_requests() as calls:
        result = await sh.agent(mode=mode, **options).execute(
            "Look at the form", max_steps=4, variables={"code": SECRET} if knows_secret else None)
    assert result.status == "done", result.message
    images = sent_images(calls)
    assert len(images) >= (3 if mode == "dom" else 1)  # two step shots, the tool's shot
    for image in images:
        region = await field_region(sh.page, image)
        assert (is_masked(region) and not shows_text(region)) if knows_secret else (shows_text(region) and not is_masked(region))


COUPON = "SPRING-2731-XQ"
#: The value echoed as ordinary text (lower case), split across elements, in a button's label, an
#: open shadow root, a same-origin iframe and a cross-origin one (a data: URL, same process); the
#: test adds a second host's page that echoes it (another site: an out-of-process iframe). The
#: page world breaks the DOM built-ins a masker would use (its code runs in our isolated world).
ECHO_PAGE = f"""<!doctype html><style>body {{ margin: 0; font: 40px monospace; background: #fff; color: #000 }}
  p, div, input {{ margin: 0 0 20px 10px; width: fit-content }} input {{ font: 40px monospace; border: 0; background: #fff; color: #000 }}
  iframe {{ border: 0; height: 60px; width: 900px; display: block }}</style>
<p id=echo>Coupon {COUPON.lower()} applied</p><p id=split>Code SPRING-<b>2731</b>-XQ</p><div id=host></div>
<input id=button type=button value="Use {COUPON}">
<iframe id=frame srcdoc="<p id=inner style='margin:0;font:40px monospace;width:fit-content'>in frame {COUPON}</p>"></iframe>
<iframe id=data src="data:text/html,<p id=inner style='margin:0;font:40px monospace;width:fit-content'>opaque {COUPON}</p>"></iframe>
<p id=plain>Nothing secret</p>
<script>
  document.getElementById("host").attachShadow({{mode: "open"}}).innerHTML = "<span id=shadowed>shadow {COUPON}</span>";
  const walkNothing = Document.prototype.createTreeWalker;
  Document.prototype.createTreeWalker = function (root, show) {{ return walkNothing.call(this, this.createElement("i"), show) }};
  Element.prototype.getBoundingClientRect = () => ({{left: 0, top: 0, right: 0, bottom: 0, width: 0, height: 0}});
  Element.prototype.getClientRects = Range.prototype.getClientRects = () => [];
  window.getComputedStyle = () => ({{display: "inline"}});
</script>"""
ECHOES = ["#echo", "#split", "#host >> #shadowed", "#button", "#frame >> internal:control=enter-frame >> #inner",
          "#data >> internal:control=enter-frame >> #inner", "#cross >> internal:control=enter-frame >> #summary-name"]


async def test_text_echoing_a_value_is_masked_on_a_hostile_page(new_stagehand, cross_server) -> None:
    """The pytest plugin's failure evidence (a full-page screenshot; a model's viewport
    screenshots paint the same boxes, see the tests above: a field's value is a text run too)
    boxes every text run showing the value; the control screenshot hides another value, and
    there every echo shows."""
    sh = await new_stagehand()
    page = sh.page
    await page.set_viewport_size({"width": 1000, "height": 700})
    await page.set_content(ECHO_PAGE + f"<iframe id=cross style='height: 300px' src='{cross_server.url('wizard/done.html')}?name={COUPON}'></iframe>")
    for frame in ("#frame", "#data"):
        await page.frame_locator(frame).locator("#inner").wait_for()
    await page.frame_locator("#cross").get_by_text(COUPON).wait_for()
    boxes = {selector: await page.locator(selector).bounding_box() for selector in [*ECHOES, "#plain"]}
    for variables, masked in ((VariableSet.of({"coupon": COUPON}), True), (VariableSet.of({"coupon": "not-on-the-page"}), False)):
        image = Image.open(io.BytesIO(await masked_screenshot(page, variables, full_page=True, scale="css"))).convert("RGB")
        for selector, box in boxes.items():
            assert box is not None, selector
            # The text's start (the second host's <dd> is a full-width block in a 16 px font).
            region = image.crop((round(box["x"]) + 2, round(box["y"]) + 2, round(box["x"]) + 60, round(box["y"] + box["height"]) - 2))
            dark = sum(region.convert("L").histogram()[:100])
            if masked and selector != "#plain":
                assert is_masked(region) and dark == 0, selector
            else:
                assert dark > 20 and not is_masked(region), selector
