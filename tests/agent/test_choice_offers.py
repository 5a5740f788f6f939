"""What a small model's choice step offers (issue 41): the actions that fit the task and the page
come first (a form's fields on a form, the filter and search controls on a table, the items the
task names), and an action that changed nothing is not offered again on the same page state.

Real Chromium on both page kinds; the model is a scripted chooser that reads the offered lines
(the enum of its answer schema, in the order the prompt lists them).
"""

from __future__ import annotations

from stagehand_py.llm import LLMClient, LLMRequest

from ._script import all_text, chooser, offered


def _position(lines: list[str], start: str) -> int:
    return next(i for i, line in enumerate(lines) if line.startswith(start))


async def test_a_table_s_filter_and_search_are_offered_before_its_rows(new_stagehand, server) -> None:
    # 40 rows of links come before the filter form on the page (as in Django's admin). The old
    # step offered the first 30 actions in page order: the rows, and no filter, search or Apply.
    seen: list[LLMRequest] = []
    model = LLMClient(chooser([("select: Status = Open", ""), ("click: button: Apply", ""),
                               ("done", "8 open issues")], seen), choice_mode=True)
    sh = await new_stagehand(model=model)
    await sh.page.goto(server.url("agent/tracker/issues.html"))
    result = await sh.agent().execute("How many open issues are there?", max_steps=4)
    assert result.status == "done", result.message
    assert sh.page.url.endswith("issues.html?status=open&q=")  # the filter was applied
    first = offered(seen, 1)
    fields = ["select: Status = All", "select: Status = Open", "type into: searchbox: Search"]
    assert all(any(line.startswith(f) for line in first) for f in fields), first
    apply, row = _position(first, "click: button: Apply"), _position(first, "click: link: Crash number 1 ")
    assert max(_position(first, f) for f in fields) < apply < row  # fields, then the form's button, then rows
    # The prompt lists them in that order too.
    text = all_text(next(r for r in seen if r.purpose == "agent"))
    assert text.index("select: Status = Open") < text.index("button: Apply") < text.index("Crash number 1 [")
    # Once the status is chosen, Apply is still there to press.
    assert any(line.startswith("click: button: Apply") for line in offered(seen, 2))


async def test_a_form_s_fields_come_before_the_links_around_it(new_stagehand, server) -> None:
    # 35 topic links come before the sign-up form; the task names the email and the account but
    # not the Name field. The old step kept the named ones and 28 links, and left Name out.
    seen: list[LLMRequest] = []
    model = LLMClient(chooser([("type into: textbox: Name", "Ada Lovelace"), ("done", "typed")], seen),
                      choice_mode=True)
    sh = await new_stagehand(model=model)
    await sh.page.goto(server.url("agent/signup.html"))
    result = await sh.agent().execute("Create an account for Ada Lovelace with the email ada@example.test",
                                                  max_steps=3)
    assert result.status == "done", result.message
    assert await sh.page.input_value("input[name=name]") == "Ada Lovelace"
    first = offered(seen, 1)
    named = [_position(first, "type into: textbox: Email"), _position(first, "click: button: Create account")]
    fields = [_position(first, "type into: textbox: Name"), _position(first, "click: checkbox: Send me the newsletter")]
    assert max(named) < min(fields) and max(fields) < _position(first, "click: link: Topic 1 ")


async def test_an_action_that_changed_nothing_is_not_offered_again_on_that_page_state(new_stagehand, server) -> None:
    # Help and Refresh change nothing; Load more adds a post. The old step dropped only the
    # last step's action: Help came back at step 3 on the very same page.
    seen: list[LLMRequest] = []
    model = LLMClient(chooser([("click: button: Help", ""), ("click: button: Refresh", ""),
                               ("click: button: Load more", ""), ("done", "two posts")], seen), choice_mode=True)
    sh = await new_stagehand(model=model)
    await sh.page.goto(server.url("agent/buttons.html"))
    result = await sh.agent().execute("Show the next post of the feed", max_steps=5)
    assert result.status == "done", result.message
    at = {n: [line.split(" [", 1)[0] for line in offered(seen, n)] for n in (1, 2, 3, 4)}
    assert {"click: button: Help", "click: button: Refresh"} <= set(at[1])
    assert "click: button: Help" not in at[2] and "click: button: Refresh" in at[2]
    assert "click: button: Help" not in at[3] and "click: button: Refresh" not in at[3]  # both changed nothing here
    # The control: Load more changed the page; on the new state both are offered again.
    assert {"click: button: Help", "click: button: Refresh"} <= set(at[4])
    assert await sh.page.locator("#items li").count() == 2
