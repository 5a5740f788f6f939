"""The choice step: a small model's agent step is a choice among the page's actions.

Real Chromium on the local test pages; only the model is scripted (it answers by picking lines
from the enum it is sent, as a grammar-bound small model does).
"""

from __future__ import annotations

import jsonschema
from pydantic import BaseModel

from stagehand_py import Stagehand
from stagehand_py._prompts.common import Fence
from stagehand_py.agent._choice_step import (
    CHOICE_STEP_BUDGET,
    GOAL_MAX,
    VALUE_MAX,
    choice_step_schema,
    page_text,
    schema_choices,
    step_choices,
    uses_choice_step,
)
from stagehand_py.llm import LLMClient, LLMRequest
from stagehand_py.llm._request import estimate_input_tokens
from stagehand_py.testing import FunctionLLM

from ._script import all_text, chooser, offered

ALL_TOOLS = ["act", "fill_form", "extract", "goto", "navigate_back", "scroll", "save_progress", "done", "fail"]
SECRET = "pw-CANARY-51e0"


# -- the schema and the actions -------------------------------------------------------------


async def test_a_form_page_offers_type_select_and_click_actions_and_the_schema_allows_only_them(page, server) -> None:
    await page.goto(server.url("forms.html"))
    outline = (await Stagehand(page, model=FunctionLLM(lambda r: {})).snapshot()).tree
    choices = step_choices(outline, Fence(), instruction="sign in", offered=ALL_TOOLS)
    lines = choices.lines
    assert any(line.startswith("type into: textbox: Username [") for line in lines)
    assert "select: Country = Germany [" in "\n".join(lines)  # one action per option of a native select
    assert not any(line.startswith("click: combobox: Country") for line in lines)  # and no click on it
    assert not any("Reset password" in line for line in lines)  # disabled
    assert any(line.startswith("click: button: Sign in [") for line in lines)
    assert lines[-5:] == ["scroll down", "go back", "note", "done", "fail"]
    schema = choice_step_schema(choices)
    assert sorted(schema_choices(schema)) == sorted(lines)
    for variant in schema["anyOf"]:
        assert variant["properties"]["value"]["maxLength"] <= VALUE_MAX
        assert variant["properties"]["next_goal"]["maxLength"] == GOAL_MAX
        assert variant["additionalProperties"] is False
    # The value is required where an action needs one, and empty where it would be ignored.
    username = next(line for line in lines if line.startswith("type into: textbox: Username"))
    sign_in = next(line for line in lines if line.startswith("click: button: Sign in"))
    valid = jsonschema.Draft202012Validator(schema).is_valid
    assert valid({"next_goal": "", "choice": username, "value": "%user%"})
    assert not valid({"next_goal": "", "choice": username, "value": ""})
    assert valid({"next_goal": "", "choice": sign_in, "value": ""})
    assert not valid({"next_goal": "", "choice": sign_in, "value": "now"})
    assert valid({"next_goal": "", "choice": "done", "value": ""}) and valid({"next_goal": "", "choice": "note", "value": "x"})
    assert not valid({"next_goal": "", "choice": "note", "value": ""})
    assert not valid({"next_goal": "", "choice": "something else", "value": ""})
    # The last step offers only the terminal tools: no page action can be chosen.
    assert step_choices(outline, Fence(), instruction="sign in", offered=["done", "fail"]).lines == ["done", "fail"]
    # A type action carries the value as the fill argument.
    tool, fixed, slot = choices.actions[username]
    assert (tool, fixed["method"], slot) == ("act", "fill", "arguments")


async def test_the_most_relevant_page_actions_are_kept_when_there_are_too_many(page, server) -> None:
    links = "".join(f'<a href="#{i}">Link number {i}</a> ' for i in range(60))
    await page.set_content(f"<main>{links}<button>Checkout basket</button></main>")
    outline = (await Stagehand(page, model=FunctionLLM(lambda r: {})).snapshot()).tree
    lines = step_choices(outline, Fence(), instruction="checkout the basket", offered=ALL_TOOLS,
                         max_page_actions=10).lines
    page_actions = [line for line in lines if line.startswith("click:")]
    assert len(page_actions) == 10
    assert any("Checkout basket" in line for line in page_actions)  # last on the page, first by relevance


async def test_the_prompt_stays_under_its_budget_on_a_long_page_and_its_prefix_is_stable(page, server) -> None:
    paragraphs = "".join(f"<p>Paragraph {i}: {'lorem ipsum dolor sit amet ' * 8}</p>" for i in range(300))
    await page.set_content(f"<h1>Long page</h1>{paragraphs}<button>Next</button>")
    outline = (await Stagehand(page, model=FunctionLLM(lambda r: {})).snapshot()).tree
    # The control: the page's text alone is many times the budget.
    assert len(page_text(outline, budget=10**9)) / 4 > 5 * CHOICE_STEP_BUDGET
    seen: list[LLMRequest] = []
    sh = Stagehand(page, model=LLMClient(chooser([("scroll down", ""), ("fail", "too long")], seen), choice_mode=True))
    result = await sh.agent().execute("Find the total on this page", max_steps=2)
    assert result.status == "failed"
    first, second = [r for r in seen if r.purpose == "agent"]
    for request in (first, second):
        text_tokens = estimate_input_tokens(request.model_copy(update={"output_schema": None}))
        assert text_tokens <= CHOICE_STEP_BUDGET
    # Cache-friendly order: the system prompt and the task are the same at every step, and the
    # first step's fence (a fresh nonce per request) appears only after them.
    assert first.messages[0] == second.messages[0]
    task_1 = all_text(first).split("Step 1 of")[0]
    assert all_text(second).startswith(task_1.split("Done so far")[0])
    assert "Task: Find the total on this page" in task_1


async def test_page_text_puts_a_list_item_on_one_line_and_can_include_links(page, server) -> None:
    await page.goto(server.url("agent/list/1.html"))
    outline = (await Stagehand(page, model=FunctionLLM(lambda r: {})).snapshot()).tree
    text = page_text(outline, budget=400)
    assert "- Anchor $10.00\n- Bolt $11.00\n- Cable $12.00" in text
    assert "Next page" not in text  # a step lists the link as an action...
    assert "link: Next page" in page_text(outline, budget=400, with_actions=True)  # ...the output call reads it


# -- the agent completes tasks with it --------------------------------------------------------


async def test_the_agent_signs_in_with_placeholders_by_choosing(new_stagehand, server) -> None:
    seen: list[LLMRequest] = []
    model = LLMClient(chooser([
        ("type into: textbox: Username", "%user%"),
        ("type into: textbox: Password", "%password%"),
        ("click: button: Sign in", ""),
        ("done", "signed in"),
    ], seen), choice_mode=True)
    sh = await new_stagehand(model=model)
    await sh.page.goto(server.url("forms.html"))
    result = await sh.agent().execute("Sign in as %user% with the password %password%", max_steps=6,
                                      variables={"user": "alice", "password": SECRET})
    assert result.status == "done" and result.success, result.message
    assert [s.tool for s in result.steps] == ["act", "act", "act", "done"]
    body = await sh.page.inner_text("body")
    assert "username=alice" in body and f"password={SECRET}" in body  # the real values were typed
    assert all(SECRET not in all_text(r) for r in seen)  # the model saw only placeholders
    assert SECRET not in result.model_dump_json()
    assert result.usage.requests == 5  # four steps, and the verdict on the final page (self_check)


class Parts(BaseModel):
    parts: list[str]


async def test_the_agent_paginates_takes_notes_and_builds_the_output(new_stagehand, server, tmp_path) -> None:
    seen: list[LLMRequest] = []
    model = LLMClient(chooser([
        ("note", "page 1: Anchor"),
        ("click: link: Next page", ""),
        ("note", "page 2: Drill"),
        ("done", "two pages read"),
    ], seen), choice_mode=True)
    sh = await new_stagehand(model=model)
    await sh.page.goto(server.url("agent/list/1.html"))
    checkpoint = tmp_path / "run.json"
    result = await sh.agent(checkpoint_path=checkpoint).execute(
        "List the first part of pages 1 and 2", max_steps=6, output=Parts)
    assert result.status == "done" and result.output == Parts(parts=["Anchor", "Drill"]), result.message
    assert [s.tool for s in result.steps] == ["save_progress", "act", "save_progress", "done"]
    assert result.data == {"notes": ["page 1: Anchor", "page 2: Drill"]}  # notes accumulate
    assert len(result.evidence.checkpoints) >= 2 and checkpoint.exists()
    # The output request saw both notes, and the page it ended on.
    (output_request,) = [r for r in seen if r.purpose == "agent_output"]
    assert "page 1: Anchor" in all_text(output_request) and "Page 2 of 4" in all_text(output_request)
    # ...and the text of the first page, kept by the agent (a small model's notes are often thin).
    assert "Page 1 of 4" in all_text(output_request) and "Bolt" in all_text(output_request)
    # A step sees its notes and the steps before it.
    last_step = [r for r in seen if r.purpose == "agent"][-1]
    assert "page 1: Anchor" in all_text(last_step) and "step 2: click: link: Next page -> ok" in all_text(last_step)


async def test_large_models_keep_the_ordinary_step() -> None:
    plain = LLMClient(FunctionLLM(lambda r: {}))
    small = LLMClient(FunctionLLM(lambda r: {}), choice_mode=True)
    assert not uses_choice_step(plain, "dom") and uses_choice_step(small, "dom")
    assert not uses_choice_step(small, "cua")


# -- what a small model would otherwise repeat ------------------------------------------------


async def test_an_action_done_on_a_page_is_not_offered_again_there(new_stagehand, server) -> None:
    # The custom dropdown: clicking the combobox again would close it (what the 1.5B model did,
    # five times over). After it is opened, its options are offered and it is not.
    seen: list[LLMRequest] = []
    model = LLMClient(chooser([
        ("click: combobox: Favourite fruit", ""),
        ("click: option: Cherry", ""),
        ("done", "chose Cherry"),
    ], seen), choice_mode=True)
    sh = await new_stagehand(model=model)
    await sh.page.goto(server.url("aria.html"))
    result = await sh.agent().execute("In the Favourite fruit dropdown, choose Cherry", max_steps=4)
    assert result.status == "done", result.message
    assert await sh.page.get_attribute("#fruit-cherry", "aria-selected") == "true"
    first, second = offered(seen, 1), offered(seen, 2)
    assert any(c.startswith("click: combobox: Favourite fruit") for c in first)  # the control
    assert not any(c.startswith("click: combobox: Favourite fruit") for c in second)
    assert not any(c.startswith("click: option: Cherry") for c in first)  # hidden until opened
    assert "step 1: click: combobox: Favourite fruit -> ok" in all_text([r for r in seen if r.purpose == "agent"][1])


async def test_a_typed_field_a_note_and_a_scroll_that_did_not_move_are_not_offered_again(new_stagehand, server) -> None:
    seen: list[LLMRequest] = []
    model = LLMClient(chooser([
        ("type into: textbox: Username", "%user%"),
        ("note", "typed the user name"),
        ("scroll down", ""),
        ("click: link: Next page", ""),
        ("done", "ok"),
    ], seen), choice_mode=True)
    sh = await new_stagehand(model=model)
    await sh.page.set_viewport_size({"width": 800, "height": 2000})  # the whole page fits: nothing to scroll
    await sh.page.goto(server.url("agent/list/1.html"))
    await sh.page.evaluate("""() => { const i = document.createElement('input'); i.setAttribute('aria-label', 'Username');
                                      document.body.prepend(i); }""")
    result = await sh.agent().execute("Type %user%, then go to the next page", max_steps=6, variables={"user": "alice"})
    assert result.status == "done", result.message
    assert result.steps[2].result.startswith("the page did not move")
    at = {n: offered(seen, n) for n in range(1, 6)}
    typed = [c for c in at[1] if c.startswith("type into: textbox: Username")]
    assert typed and not any(c in at[n] for c in typed for n in (2, 3, 4))
    assert "note" in at[1] and "note" in at[2] and "note" not in at[3] and "note" not in at[4]
    assert "scroll down" in at[3] and "scroll down" not in at[4]
    # A new page (after the Next link): a note and a scroll are offered again.
    assert "note" in at[5] and "scroll down" in at[5]


async def test_the_task_s_untyped_placeholders_are_named_until_typed(new_stagehand, server) -> None:
    # A small model pressed Sign in with the password field empty; every step now says what the
    # task still needs typed. The control: the first two steps name it, the last does not.
    seen: list[LLMRequest] = []
    model = LLMClient(chooser([
        ("type into: textbox: Username", "%user%"),
        ("type into: textbox: Password", "%password%"),
        ("done", "typed"),
    ], seen), choice_mode=True)
    sh = await new_stagehand(model=model)
    await sh.page.goto(server.url("forms.html"))
    result = await sh.agent().execute("Type %user% as the username and %password% as the password", max_steps=4,
                                      variables={"user": "alice", "password": SECRET})
    assert result.status == "done", result.message
    steps = [all_text(r) for r in seen if r.purpose == "agent"]
    assert "Not typed yet: %user%, %password%" in steps[0]
    assert "Not typed yet: %password%." in steps[1]
    assert "Not typed yet" not in steps[2]
    assert all(SECRET not in text for text in steps)


async def test_once_the_actions_the_task_names_are_done_unnamed_fields_are_left_alone(new_stagehand, server) -> None:
    # After opening the Billing tab the 1.5B model went on clicking the other tabs (and lost
    # the panel it was asked to read). Once every action the task names is done on a page, the
    # state-setting actions it does not name are not offered; buttons still are.
    seen: list[LLMRequest] = []
    model = LLMClient(chooser([("click: tab: Billing", ""), ("done", "opened")], seen), choice_mode=True)
    sh = await new_stagehand(model=model)
    await sh.page.goto(server.url("aria.html"))
    result = await sh.agent().execute("Open the Billing tab", max_steps=4)
    assert result.status == "done", result.message
    first, second = offered(seen, 1), offered(seen, 2)
    assert any(c.startswith("click: tab: Security") for c in first)  # the control
    assert not any(c.startswith(("click: tab:", "click: combobox:")) for c in second)
    assert any(c.startswith("click: button: Actions") for c in second)
    assert await sh.page.get_attribute("#tab-billing", "aria-selected") == "true"


async def test_a_link_to_a_page_already_seen_says_so(new_stagehand, server) -> None:
    # The 1.5B model walked Next, Home, Next, Home... on a three-page site.
    seen: list[LLMRequest] = []
    model = LLMClient(chooser([("click: link: Next", ""), ("done", "on page 2")], seen), choice_mode=True)
    sh = await new_stagehand(model=model)
    await sh.page.goto(server.url("site/index.html"))
    result = await sh.agent().execute("Follow the Next link", max_steps=3)
    assert result.status == "done", result.message
    second = offered(seen, 2)
    home = [c for c in second if c.startswith("click: link: Home")]
    assert home and all(c.endswith("(to a page seen before)") for c in home)
    nexts = [c for c in second if c.startswith("click: link: Next")]
    assert nexts and not any("seen before" in c for c in nexts)  # the control: page 3 is new


async def test_a_chosen_radio_closes_its_group_and_unnamed_fields_go_once_the_named_ones_are_set(
    new_stagehand, server,
) -> None:
    # The 1.5B model chose Pro, typed "your_username" into the fields the task never named,
    # then clicked Free: the form went in with plan=free.
    seen: list[LLMRequest] = []
    model = LLMClient(chooser([("click: radio: Pro", ""), ("click: button: Sign in", ""), ("done", "sent")], seen),
                      choice_mode=True)
    sh = await new_stagehand(model=model)
    await sh.page.goto(server.url("forms.html"))
    result = await sh.agent().execute("Choose the Pro plan, then press Sign in", max_steps=4)
    assert result.status == "done", result.message
    assert "plan=pro" in await sh.page.inner_text("body")
    first, second = offered(seen, 1), offered(seen, 2)
    for control in ("click: radio: Free", "click: radio: Team", "type into: textbox: Username"):
        assert any(c.startswith(control) for c in first), control  # offered before
        assert not any(c.startswith(control) for c in second), control  # not after
    assert any(c.startswith("click: button: Sign in") for c in second)
