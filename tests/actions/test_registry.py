"""The method registry, selector parsing and the executor's checks that run before the browser."""

from __future__ import annotations

import re
from importlib import resources
from typing import get_args

import pytest

from stagehand_py import (
    Action,
    ActionMethod,
    InvalidArgumentError,
    UnknownVariableError,
    UnsupportedMethodError,
)
from stagehand_py._actions import (
    KNOWN_METHODS,
    METHODS,
    _resolve,
    execute_action,
    normalize_method,
    parse_canonical_xpath,
)
from stagehand_py._secrets import VariableSet


class _NoBrowser:
    """A page stand-in that fails the test on any use: proves a check ran before the browser."""

    def __getattr__(self, name: str):
        raise AssertionError(f"the page was used ({name}) before validation finished")


def test_registry_covers_action_method_exactly() -> None:
    assert tuple(METHODS) == get_args(ActionMethod) == KNOWN_METHODS


def test_js_files_share_the_shadow_store_key() -> None:
    for name in ("_resolver.js", "_shadow_init.js"):
        source = resources.files("stagehand_py._actions").joinpath(name).read_text()
        assert re.search(r'const KEY = "([^"]+)"', source).group(1) == _resolve.SHADOW_STORE_KEY


@pytest.mark.parametrize(
    ("given", "expected"),
    [("doubleClick", "double_click"), ("double-click", "double_click"), (" Fill ", "fill"),
     ("scrollIntoView", "scroll_into_view"), ("selectOptionFromDropdown", "select_option"),
     ("nextChunk", "next_chunk"), ("dragAndDrop", "drag_and_drop"), ("setInputFiles", "set_input_files")],
)
def test_method_aliases(given: str, expected: str) -> None:
    assert normalize_method(given) == expected


def test_canonical_parsing() -> None:
    steps = parse_canonical_xpath("/html[1]/body[1]/iframe[2]/html[1]/body[1]/x-w[1]//div[3]/text()[1]")
    assert [s.raw for s in steps] == ["html[1]", "body[1]", "iframe[2]", "html[1]", "body[1]", "x-w[1]", "div[3]", "text()[1]"]
    assert [s.shadow for s in steps].index(True) == 6
    assert steps[2].is_frame and steps[-1].is_text
    assert parse_canonical_xpath("/svg[1]/foreignObject[1]")[1].name == "foreignobject"
    foreign = parse_canonical_xpath("/html[1]/*[local-name()='svg'][2]/p[1]/text()[normalize-space()][4]")
    assert [(s.name, s.index, s.nonblank) for s in foreign] == [
        ("html", 1, False), ("svg", 2, False), ("p", 1, False), ("text()", 4, True)
    ]
    for other in ("//button[@id='x']", "/html/body", "/html[1]/body[1]/text()[1]/b[1]", "/html[1]/body[1]/div[0]",
                  "/html[1]/body[1]/*[1]", "(//a)[1]", "html[1]"):
        assert parse_canonical_xpath(other) is None, other


async def test_unknown_method_lists_known_ones() -> None:
    with pytest.raises(UnsupportedMethodError) as info:
        await execute_action(_NoBrowser(), Action(selector="/html[1]", method="teleport"))  # type: ignore[arg-type]
    assert "'teleport'" in str(info.value) and "double_click" in str(info.value) and "set_input_files" in str(info.value)
    assert isinstance(info.value, InvalidArgumentError)


@pytest.mark.parametrize(
    ("method", "arguments", "expected"),
    [
        ("fill", [], "fill expects arguments [text]"),
        ("scroll_by", ["10"], "scroll_by expects arguments [dx, dy]"),
        ("hover", ["x"], "hover expects arguments [] (no arguments)"),
        ("click", ["left", "right"], "click expects arguments"),
        ("click", ["sideways"], "'sideways' is not a mouse button"),
        ("scroll_to", ["half"], "'half' is not a percentage"),
        ("scroll_to", ["150%"], "outside 0%..100%"),
        ("scroll_by", ["0", "down"], "argument 2 'down' is not a number"),
        ("press", [" "], "is empty"),
        ("drag_and_drop", ["0-42"], "no xpath_map"),
        ("set_input_files", ["/no/such/file.png"], "is not an existing file"),
    ],
)
async def test_argument_errors_before_the_browser(method: str, arguments: list[str], expected: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        await execute_action(_NoBrowser(), Action(selector="/html[1]", method=method, arguments=arguments))  # type: ignore[arg-type]
    assert expected in str(info.value)


async def test_empty_string_argument_tolerated_for_argumentless_methods() -> None:
    # Models often send [""]; for a method without arguments that is not an error (it gets to the browser).
    with pytest.raises(AssertionError, match="the page was used"):
        await execute_action(_NoBrowser(), Action(selector="/html[1]", method="hover", arguments=[""]))  # type: ignore[arg-type]


async def test_unknown_variable_before_the_browser_and_value_errors_quote_placeholders() -> None:
    with pytest.raises(UnknownVariableError):
        await execute_action(_NoBrowser(), Action(selector="/html[1]", method="fill", arguments=["%pw%"]), variables=VariableSet.of({}))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError) as info:
        await execute_action(
            _NoBrowser(),  # type: ignore[arg-type]
            Action(selector="/html[1]", method="scroll_by", arguments=["0", "%dy%"]),
            variables=VariableSet.of({"dy": "CANARY-7f3a9c"}),
        )
    assert "'%dy%'" in str(info.value) and "CANARY" not in str(info.value)


async def test_timeout_must_be_positive() -> None:
    with pytest.raises(InvalidArgumentError):
        await execute_action(_NoBrowser(), Action(selector="/html[1]"), timeout=0)  # type: ignore[arg-type]
