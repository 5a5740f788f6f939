"""Acting with a secret: keys never land in the wrong element, and no error quotes a piece of
the value. Each test has a control that shows the unsafe outcome the library prevents."""

from __future__ import annotations

import pytest

from stagehand_py import Action, ActionFailedError, StagehandError
from stagehand_py._actions import execute_action
from stagehand_py._secrets import VariableSet

PAGE = """<!doctype html><label>Note <input id=note></label>
<label>PIN <input id=pin disabled></label>"""


async def test_typing_into_a_disabled_field_is_a_typed_error_and_types_nowhere(page) -> None:
    await page.set_content(PAGE)
    await page.focus("#note")  # another field has the focus
    with pytest.raises(ActionFailedError, match="disabled or read-only") as info:
        await execute_action(page, Action(selector="#pin", method="type", arguments=["%pin%"]), variables=VariableSet.of({"pin": "4711"}))
    assert "4711" not in str(info.value)
    assert await page.input_value("#note") == "" and await page.input_value("#pin") == ""


async def test_control_playwright_alone_types_the_secret_into_the_focused_field(page) -> None:
    """Control: Playwright's own type() on the disabled field sends the keys to the field that
    has the focus: the secret ends up in the note."""
    await page.set_content(PAGE)
    await page.focus("#note")
    await (await page.query_selector("#pin")).type("4711")
    assert await page.input_value("#note") == "4711"


async def test_an_error_never_quotes_a_piece_of_the_value(page) -> None:
    await page.set_content(PAGE)
    with pytest.raises(StagehandError) as info:
        await execute_action(page, Action(selector="#note", method="press", arguments=["%chord%"]), variables=VariableSet.of({"chord": "Shift+@w9x"}))
    message = str(info.value) + "".join(str(c) for c in (info.value.__cause__, info.value.__context__) if c)
    assert "@w9x" not in message and "Shift+@w9x" not in message


async def test_control_playwright_quotes_the_piece_it_could_not_parse(page) -> None:
    await page.set_content(PAGE)
    with pytest.raises(Exception) as info:
        await page.press("#note", "Shift+@w9x")
    assert "@w9x" in str(info.value)
