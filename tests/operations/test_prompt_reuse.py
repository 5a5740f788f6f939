"""Prompts laid out for a prompt cache: what consecutive calls on one page share, byte for byte.

A model with a prompt cache (llama.cpp's slot, OpenAI's prefix cache) pays only for the tokens
after the longest prefix it has seen. These tests render each request as the model reads it
(roles and texts in order) and check that observe and the act that follows, an extract and the
next verb, and an extract and its re-ask share everything up to the end of the page's outline.
The control runs the same calls with the layout off (task first, a fresh fence per request):
then they share little more than the system prompt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from stagehand_py import Action
from stagehand_py._operations._pipeline import states_apart
from stagehand_py._prompts.act import act_user, heal_user
from stagehand_py._prompts.choice import choice_enum
from stagehand_py._prompts.common import Fence, set_reuse_layout
from stagehand_py._prompts.observe import observe_user
from stagehand_py.llm import LLMClient, LLMRequest
from stagehand_py.llm._messages import message_text
from stagehand_py.testing import FunctionLLM, capture_requests

from ._ops import element, find_id

_CLOSING = re.compile(r"END UNTRUSTED [a-z]{14}>>>")


def rendered(request: LLMRequest) -> str:
    """The request as the model reads it: each message's role, then its text, in order."""
    return "".join(f"<{m.role}>\n{message_text(m)}\n" for m in request.messages)


def outline_end(text: str) -> int:
    """Where the first fenced block (the page outline) of the user message ends."""
    user = text.index("<user>")
    found = _CLOSING.search(text, user)
    assert found, text[:2000]
    return found.end()


def shared(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` have in common from the start."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


@pytest.fixture
def layout_off() -> Iterator[None]:
    set_reuse_layout(False)
    try:
        yield
    finally:
        set_reuse_layout(True)


def _model(request: LLMRequest) -> dict[str, object]:
    if request.purpose == "extract":  # in choice mode: the line that holds it
        lines = request.output_schema.get("$defs", {}).get("text_line", {}).get("enum")
        label = next(line for line in lines if line.startswith("Username [")) if lines else "Username"
        return {"data": {"username_label": label}, "instruction_satisfied": True}
    if "element_id" not in json.dumps(request.output_schema):  # choice mode: pick the line from the enum
        line = next(c for c in choice_enum(request.output_schema) if c.startswith("textbox: Username"))
        found = [{"element": line, "method": "fill", "arguments": ["ada"]}]
    else:
        found = [element(find_id(request, "textbox: Username"), "fill", ["ada"], "Username box")]
    return {"elements": found, "opens_options": False} if request.purpose == "act" else {"elements": found}


async def _three_verbs(make_stagehand, server, *, choice: bool) -> list[str]:
    sh = await make_stagehand(model=LLMClient(FunctionLLM(_model), choice_mode=choice))
    await sh.page.goto(server.url("forms.html"))
    schema = {"type": "object", "properties": {"username_label": {"type": "string"}}, "required": ["username_label"]}
    with capture_requests() as calls:
        await sh.observe("the username box", vision=False)
        await sh.extract("the label of the username box", schema=schema)
        await sh.act("type ada into the username box", vision=False)  # last: it changes the page
    assert [c.request.purpose for c in calls] == ["observe", "extract", "act"]
    assert await sh.page.input_value("#username") == "ada"
    observe, extract, act = (rendered(c.request) for c in calls)
    return [observe, act, extract]


@pytest.mark.parametrize("choice", [False, True], ids=["ids", "choice-mode"])
async def test_observe_then_act_then_extract_share_the_page_byte_for_byte(make_stagehand, server, choice):
    observe, act, extract = await _three_verbs(make_stagehand, server, choice=choice)
    end = outline_end(observe)
    # Everything up to the end of the outline is the same text: the act and the extract pay only
    # for what they ask (their task, the instruction, the choices or the schema's words).
    assert shared(observe, act) >= end and outline_end(act) == end
    if choice:
        # A choice-mode extract reads the page's numbered text lines instead of its outline (about
        # half the tokens on a page not read before; test_extract_choice.py): the preamble is shared.
        assert shared(observe, extract) >= observe.index("<user>") and outline_end(extract) < end
    else:
        assert shared(observe, extract) >= end and outline_end(extract) == end
    assert act[end:].count("Instruction:") == 1 and "Instruction:" not in act[:end]
    if not choice:
        # observe and act ask one task: an act after an observe pays only for its instruction and its
        # closing line. (In choice mode an act that types offers only the fields, so from the choices
        # on it differs; test_in_choice_mode_observe_and_act_share_the_choices_too has a click.)
        assert shared(observe, act) >= act.index("Instruction:")
        assert len(act) - act.index("Instruction:") < 400, act[act.index("Instruction:"):]


async def test_control_with_the_layout_off_the_calls_share_only_the_system_prompt(make_stagehand, server,
                                                                                   layout_off):
    observe, act, extract = await _three_verbs(make_stagehand, server, choice=False)
    system_end = observe.index("<user>") + len("<user>\n")
    assert shared(observe, act) < outline_end(observe) and shared(observe, extract) < outline_end(observe)
    assert shared(observe, act) >= system_end  # the one preamble is still the same for every verb


async def test_an_extract_re_ask_repeats_the_first_request_whole_then_adds(make_stagehand, server):
    answers = iter([{"data": {"count": "many"}, "instruction_satisfied": True},
                    {"data": {"count": 3}, "instruction_satisfied": True}])
    sh = await make_stagehand(model=FunctionLLM(lambda request: next(answers)))
    await sh.page.goto(server.url("forms.html"))
    schema = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}
    with capture_requests() as calls:
        assert await sh.extract("how many plans are offered", schema=schema) == {"count": 3}
    first, reask = (rendered(c.request) for c in calls)
    assert reask.startswith(first) and len(reask) > len(first)
    assert reask[len(first):].startswith("<assistant>")


def test_an_act_and_its_heal_share_the_outline_and_the_fence() -> None:
    fence = Fence()
    outline = "[0-1] RootWebArea: Shop\n  [0-2] button: Add to basket\n  [0-3] link: Checkout"
    act = act_user("add it to the basket", outline, fence, variables={}, part=None)
    heal = heal_user("Add to basket button", "click", [], outline, fence)
    observe = observe_user("the basket button", outline, fence, variables={}, part=(1, 2))
    end = act.index(fence.closing) + len(fence.closing)
    assert shared(act, heal) >= end
    # A part label sits before the outline: requests about the same part share it too.
    assert "part 1 of 2" in observe[: observe.index(fence.opening)]


async def test_in_choice_mode_observe_and_act_share_the_choices_too(make_stagehand, server):
    def model(request: LLMRequest) -> dict[str, object]:
        enum = choice_enum(request.output_schema)
        line = next(c for c in enum if c.startswith("checkbox: Remember me"))
        found = [{"element": line, "method": "check", "arguments": []}]
        return {"elements": found, "opens_options": False} if request.purpose == "act" else {"elements": found}

    sh = await make_stagehand(model=LLMClient(FunctionLLM(model), choice_mode=True))
    await sh.page.goto(server.url("forms.html"))
    with capture_requests() as calls:
        await sh.observe("the Remember me checkbox", vision=False)
        assert (await sh.act("tick the Remember me checkbox", vision=False)).success
    observe, act = (rendered(c.request) for c in calls)
    choices_end = _CLOSING.search(observe, outline_end(observe)).end()  # the second fenced block: the choices
    assert "Choices:" in observe[outline_end(observe):choices_end]
    assert shared(observe, act) >= choices_end
    assert act.index("Instruction:") > choices_end
    assert shared(observe, act) >= act.index("Instruction:")  # the task and how to choose too


def _tick_remember(request: LLMRequest) -> dict[str, object]:
    if "element_id" not in json.dumps(request.output_schema):  # choice mode: pick the line from the enum
        line = next(c for c in choice_enum(request.output_schema) if c.startswith("checkbox: Remember me"))
        found: list[dict[str, object]] = [{"element": line, "method": "check", "arguments": []}]
    else:
        found = [element(find_id(request, "checkbox: Remember me"), "check")]
    return {"elements": found, "opens_options": False} if request.purpose == "act" else {"elements": found}


@pytest.mark.parametrize("choice", [False, True], ids=["ids", "choice-mode"])
async def test_an_act_after_typing_shares_the_outline_the_states_come_after_the_task(make_stagehand, server, choice):
    """The quickstart's flow: observe, two fields typed (no model), then an act. The values and the
    focus changed near the top of the form; the outline the model reads leaves them out and the
    act lists them after the task, so it shares everything before that with the observe."""
    sh = await make_stagehand(model=LLMClient(FunctionLLM(_tick_remember), choice_mode=choice))
    await sh.page.goto(server.url("forms.html"))
    snapshot = await sh.snapshot()
    with capture_requests() as calls:
        await sh.observe("the Remember me checkbox", vision=False)
        for field, value in (("Username", "ada"), ("Password", "pw-canary")):
            xpath = snapshot.xpath_map[find_id(snapshot.tree, f"textbox: {field}")]
            await sh.act(Action(selector=f"xpath={xpath}", description=field, method="fill", arguments=[value]))
        assert (await sh.act("tick the Remember me checkbox", vision=False)).success
    observe, act = (rendered(c.request) for c in calls)
    # The snapshot keeps its states (the public outline is unchanged) ...
    assert re.search(r'textbox: Username value="ada"', (await sh.snapshot()).tree)
    # ... the outline the model reads does not, and the act's states block has them.
    outline = act[act.index("<user>"):outline_end(act)]
    assert "textbox: Username\n" in outline and "value=" not in outline.replace('value="50"', "")
    states = act.index("\n\n<<<BEGIN UNTRUSTED", outline_end(act) + 1)
    assert act[states:].split("\n", 3)[2].endswith("(current values and states)")
    block = act[states:act.index("Instruction:")]
    assert 'textbox: Username value="ada"' in block and "textbox: Password [filled] [focused]" in block
    assert "radio: Free [checked]" in block
    assert shared(observe, act) >= states > outline_end(act)
    assert "Instruction: tick the Remember me checkbox" in act[states:]


def test_states_apart_moves_only_what_a_user_changes() -> None:
    text = "\n".join([
        "[0-1] form: Sign in",
        '  [0-2] textbox: Username value="ada" [required] [focused]',
        '  [0-3] textbox value="unnamed keeps its value"',
        "  [0-4] checkbox: Remember me [checked]",
        "  [0-5] button: Filters [expanded]",
        "  [0-6] button: Reset [disabled]",
        "  [0-7] StaticText: value=\"not a field\" [checked]",
        "  [0-8] textbox: Password [filled]",
    ])
    stable, states = states_apart(text)
    assert stable.split("\n") == [
        "[0-1] form: Sign in",
        "  [0-2] textbox: Username [required]",
        '  [0-3] textbox value="unnamed keeps its value"',
        "  [0-4] checkbox: Remember me",
        "  [0-5] button: Filters [expanded]",
        "  [0-6] button: Reset [disabled]",
        '  [0-7] StaticText: value="not a field" [checked]',  # page text, kept as it is
        "  [0-8] textbox: Password",
    ]
    assert states == ['[0-2] textbox: Username value="ada" [focused]', "[0-4] checkbox: Remember me [checked]",
                      "[0-8] textbox: Password [filled]"]
    assert states_apart("[0-1] link: Home\n  text") == ("[0-1] link: Home\n  text", [])
