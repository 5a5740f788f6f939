"""A secret filled through %password% reaches the DOM and nothing else: no log, message or repr."""

from __future__ import annotations

import logging
import traceback

import pytest
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from stagehand_py import Action, ActionFailedError, StagehandError, StagehandTimeoutError
from stagehand_py._actions import execute_action
from stagehand_py._actions._translate import safe_cause, translate_error
from stagehand_py._secrets import VariableSet

CANARY = "CANARY-7f3a9c"
VARIABLES = {"password": {"value": CANARY, "description": "the account password"}, "user": "ada"}


def _everything_said(records: list[logging.LogRecord], errors: list[BaseException]) -> str:
    parts = []
    for record in records:
        parts += [record.getMessage(), repr(record.args), str(record.msg)]
    for error in errors:
        parts += ["".join(traceback.format_exception(error)), repr(error), str(error)]
        for linked in (error.__cause__, error.__context__):
            if linked is not None:
                parts += [repr(linked), str(linked)]
    return "\n".join(parts)


@pytest.fixture
def log(caplog) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger="stagehand_py")
    return caplog


async def test_secret_reaches_the_dom_and_no_log(page, server, log) -> None:
    await page.goto(server.url("forms.html"))
    action = Action(selector="xpath=/html[1]/body[1]/form[1]/input[2]", method="fill", arguments=["%password%"])
    await execute_action(page, action, variables=VariableSet.of(VARIABLES))
    await execute_action(page, Action(selector="css=#username", method="type", arguments=["%user%"]), variables=VariableSet.of(VARIABLES))
    assert await page.input_value("#password") == CANARY
    assert await page.input_value("#username") == "ada"
    assert log.records, "the executor should log at debug"
    assert any("%password%" in r.getMessage() for r in log.records)
    assert CANARY not in _everything_said(log.records, []) and CANARY not in repr(action)


@pytest.mark.parametrize(
    ("selector", "method", "expected"),
    [
        ("css=#submit", "fill", ActionFailedError),  # a <button> cannot be filled
        ("css=#password", "fill", StagehandTimeoutError),  # hidden below: never becomes visible
        ("css=#country", "select_option", ActionFailedError),  # no such option
        ("/html[1]/body[1]/form[1]/input[9]", "fill", StagehandError),  # not found
    ],
)
async def test_secret_stays_out_of_errors_after_substitution(page, server, log, selector, method, expected) -> None:
    await page.goto(server.url("forms.html"))
    await page.evaluate("document.querySelector('#password').style.display = 'none'")
    action = Action(selector=selector, method=method, arguments=["%password%"])
    with pytest.raises(expected) as info:
        await execute_action(page, action, variables=VariableSet.of(VARIABLES), timeout=10)
    assert CANARY not in _everything_said(log.records, [info.value])
    assert await page.input_value("#password") == ""


def test_playwright_text_that_echoes_the_secret_is_redacted() -> None:
    # Playwright sometimes quotes what it was typing; neither our message nor the chained cause may carry it.
    for cls in (PlaywrightError, PlaywrightTimeoutError):
        original = cls(f'ElementHandle.fill: cannot type "{CANARY}" here\nCall log: ...')
        error = translate_error(original, what="fill on css=#x", selector="css=#x", method="fill", timeout=1, secrets=[CANARY])
        cause = safe_cause(original, [CANARY])
        assert CANARY not in str(error) and CANARY not in str(cause) and "%secret%" in str(cause)
        assert isinstance(cause, cls)
    harmless = PlaywrightError("Element is not visible")
    assert safe_cause(harmless, [CANARY]) is harmless


async def test_drag_target_from_a_variable_stays_out_of_not_found(page, log) -> None:
    await page.set_content("<div draggable='true'>x</div>")
    secret_target = f"css=#{CANARY}"
    with pytest.raises(StagehandError) as info:
        await execute_action(
            page,
            Action(selector="/html[1]/body[1]/div[1]", method="drag_and_drop", arguments=["%target%"]),
            variables=VariableSet.of({"target": secret_target}),
            timeout=10,
        )
    assert "%secret%" in str(info.value)
    assert CANARY not in _everything_said(log.records, [info.value])
