"""When observe/act/extract send a screenshot: vision="auto" | True | False, models without
image input, and what the model is shown (legend ids it can answer with)."""

from __future__ import annotations

import io
import re

import pytest
from PIL import Image

from stagehand_py._errors import ConfigurationError, InvalidArgumentError
from stagehand_py._operations._pipeline import plan_requests
from stagehand_py._stagehand import Stagehand
from stagehand_py.llm import ImagePart, LLMRequest, Profile
from stagehand_py.llm._messages import message_text
from stagehand_py.testing import FunctionLLM, ScriptedLLM

NOTHING = {"elements": [], "opens_options": False}


def images(request: LLMRequest) -> list[ImagePart]:
    return [p for m in request.messages if m.role == "user" for p in m.content if isinstance(p, ImagePart)]


def user_text(request: LLMRequest) -> str:
    return "\n".join(message_text(m) for m in request.messages if m.role == "user")


def legend_id(request: LLMRequest, pattern: str) -> str:
    """The element id the screenshot legend gives for the box whose line matches ``pattern``."""
    m = re.search(rf"^(\d+): \[(\d+-\d+)\] {pattern}", user_text(request), re.MULTILINE)
    assert m, user_text(request)[-1500:]
    return m.group(2)


def pick(eid: str, method: str = "click") -> dict:
    return {"elements": [{"element_id": eid, "description": f"element {eid}", "method": method, "arguments": []}],
            "opens_options": False}


def blind(model):
    model.profile = Profile(output_mode="json_schema", supports_images=False)
    return model


@pytest.mark.parametrize(
    ("vision", "confidence", "sees", "expected"),
    [
        ("auto", 0.2, True, [("a", True), ("b", True)]),              # low confidence: screenshot from the start
        ("auto", 0.9, True, [("a", False), ("b", False), ("a", True)]),  # confident: fallback after nothing found
        ("auto", None, True, [("a", False), ("b", False), ("a", True)]),
        ("auto", 0.2, False, [("a", False), ("b", False)]),           # blind model: never, no error
        (True, 0.9, True, [("a", True), ("b", True)]),
        (False, 0.2, True, [("a", False), ("b", False)]),
    ],
)
def test_request_plan(vision, confidence, sees, expected) -> None:
    assert list(plan_requests(["a", "b"], vision, confidence=confidence, sees=sees)) == expected


async def test_auto_on_a_low_confidence_page_shows_the_screenshot_first(page, server) -> None:
    await page.goto(server.url("vision/toolbar.html"))
    # The third box is the save icon; the model reads its id off the legend, as a seeing model would.
    model = FunctionLLM(lambda r: pick(_box(r, 3)))
    result = await Stagehand(page, model=model).act("click the save icon")
    assert result.success and await page.text_content("#status") == "save"
    (request,) = model.requests
    (image,) = images(request)
    assert Image.open(io.BytesIO(image.data)).size == (1280, 720)
    assert "Screenshot legend" in user_text(request) and "never with a box number" in message_text(request.messages[0])


def _box(request: LLMRequest, number: int) -> str:
    m = re.search(rf"^{number}: \[(\d+-\d+)\]", user_text(request), re.MULTILINE)
    assert m, user_text(request)[-1500:]
    return m.group(1)


async def test_auto_on_a_confident_page_falls_back_only_when_the_outline_finds_nothing(page, server) -> None:
    await page.goto(server.url("forms.html"))

    def model_fn(request: LLMRequest) -> dict:
        if not images(request):
            return NOTHING  # the outline "did not help"
        return pick(legend_id(request, "checkbox: Remember me"), "check")

    model = FunctionLLM(model_fn)
    sh = Stagehand(page, model=model)
    result = await sh.act("tick the box that keeps me signed in")
    assert result.success and await page.is_checked("#remember")
    assert [len(images(r)) for r in model.requests] == [0, 1]

    # Found in the outline: no screenshot at all.
    direct = FunctionLLM(lambda r: pick(re.search(r"\[(\d+-\d+)\] checkbox: Remember me", user_text(r)).group(1), "uncheck"))
    assert (await Stagehand(page, model=direct).act("untick remember me")).success and not await page.is_checked("#remember")
    assert [len(images(r)) for r in direct.requests] == [0]


async def test_vision_true_and_false(page, server) -> None:
    await page.goto(server.url("forms.html"))
    forced = ScriptedLLM([NOTHING])
    assert not (await Stagehand(page, model=forced).act("press the red button", vision=True)).success
    assert [len(images(r)) for r in forced.requests] == [1]  # forced: first request; nothing found: no second

    await page.goto(server.url("vision/toolbar.html"))
    off = ScriptedLLM([NOTHING])
    assert not (await Stagehand(page, model=off).act("click the save icon", vision=False)).success
    assert [len(images(r)) for r in off.requests] == [0]  # low confidence, nothing found, still no screenshot

    with pytest.raises(InvalidArgumentError, match="vision=...\\) takes 'auto', True or False"):
        await Stagehand(page, model=ScriptedLLM([])).act("x", vision="always")


async def test_a_model_without_image_input(page, server) -> None:
    await page.goto(server.url("vision/toolbar.html"))
    forced = blind(ScriptedLLM([]))
    with pytest.raises(ConfigurationError, match="without image input"):
        await Stagehand(page, model=forced).act("click the save icon", vision=True)
    with pytest.raises(ConfigurationError, match="without image input"):
        await Stagehand(page, model=forced).observe("icons", vision=True)
    with pytest.raises(ConfigurationError, match=r"extract\(screenshot=True\)"):
        await Stagehand(page, model=forced).extract("status", screenshot=True)
    assert forced.requests == []  # refused before anything was sent

    auto = blind(ScriptedLLM([NOTHING]))
    assert not (await Stagehand(page, model=auto).act("click the save icon")).success
    assert [len(images(r)) for r in auto.requests] == [0]  # low confidence and nothing found: fallback skipped
    auto.assert_exhausted()


async def test_observe_falls_back_too(page, server) -> None:
    await page.goto(server.url("forms.html"))
    model = FunctionLLM(lambda r: {"elements": []} if not images(r) else
                        {"elements": [pick(legend_id(r, "button: Sign in"))["elements"][0]]})
    actions = await Stagehand(page, model=model).observe("the submit control")
    assert len(actions) == 1 and await page.locator(actions[0].selector).get_attribute("id") == "submit"
    assert [len(images(r)) for r in model.requests] == [0, 1]


async def test_extract_screenshot_of_the_page_or_a_region(page, server) -> None:
    await page.goto(server.url("vision.html"))
    model = FunctionLLM(lambda r: {"data": {"extraction": "Apr is highest"}, "instruction_satisfied": True})
    sh = Stagehand(page, model=model)
    await sh.extract("which month sold most?", screenshot=True, selector="#chart")
    await sh.extract("which month sold most?", screenshot=True)
    await sh.extract("which month sold most?")
    sizes = [[Image.open(io.BytesIO(i.data)).size for i in images(r)] for r in model.requests]
    assert sizes[0][0][0] == 320 and sizes[0][0][1] in (160, 161)  # the chart only
    assert sizes[1:] == [[(1280, 720)], []]
    assert "only as pixels" in message_text(model.requests[0].messages[0])
    assert "only as pixels" not in message_text(model.requests[2].messages[0])
