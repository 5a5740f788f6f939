"""%placeholder% substitution: pure logic, no browser."""

from __future__ import annotations

import pytest

from stagehand_py import InvalidArgumentError, UnknownVariableError
from stagehand_py._actions import placeholders_in, substitute
from stagehand_py._secrets import VariableSet


def test_replaces_exact_tokens_one_output_per_input() -> None:
    variables = {"user": "ada", "username": "ada_l", "password": {"value": "s3cret", "description": "pw"}}
    out = substitute(["%username%", "%user%", "x %password% y", "plain"], VariableSet.of(variables))
    assert out == ["ada_l", "ada", "x s3cret y", "plain"]


def test_no_partial_key_replacement() -> None:
    # %user% must not touch %username% (the legacy port replaced substrings of keys).
    with pytest.raises(UnknownVariableError) as info:
        substitute(["%username%"], VariableSet.of({"user": "ada"}))
    assert info.value.missing == ["username"]
    assert info.value.available == ["user"]


def test_no_cartesian_product() -> None:
    variables = {"a": "1", "b": "2", "c": "3"}
    assert substitute(["%a%%b%", "%c%"], VariableSet.of(variables)) == ["12", "3"]


def test_values_are_not_substituted_again() -> None:
    assert substitute(["%a%"], VariableSet.of({"a": "%b%", "b": "no"})) == ["%b%"]


def test_numbers_and_plain_percent_signs() -> None:
    assert substitute(["%n%", "50%", "100% sure", 7, 1.5], VariableSet.of({"n": 42})) == ["42", "50%", "100% sure", "7", "1.5"]
    assert substitute(["%f%"], VariableSet.of({"f": 2.5})) == ["2.5"]


def test_unknown_placeholder_without_any_variables() -> None:
    with pytest.raises(UnknownVariableError) as info:
        substitute(["%password%"], VariableSet.of(None))
    assert "%password%" in str(info.value)
    assert "available: none" in str(info.value)
    assert isinstance(info.value, InvalidArgumentError) and isinstance(info.value, ValueError)


def test_unknown_variable_error_names_only() -> None:
    with pytest.raises(UnknownVariableError) as info:
        substitute(["%missing%", "%token%"], VariableSet.of({"token": "CANARY-7f3a9c"}))
    text = str(info.value) + repr(info.value) + repr(info.value.args)
    assert "CANARY-7f3a9c" not in text
    assert info.value.missing == ["missing"]


def test_malformed_variables_never_show_values() -> None:
    with pytest.raises(InvalidArgumentError) as info:
        substitute(["%p%"], VariableSet.of({"p": {"description": "no value key"}}))
    assert "'value'" in str(info.value)
    with pytest.raises(InvalidArgumentError) as info:
        substitute(["%p%"], VariableSet.of({"p": ["CANARY-7f3a9c"]}))
    assert "CANARY" not in str(info.value)
    with pytest.raises(InvalidArgumentError):
        substitute(["x"], VariableSet.of({"bad name": "v"}))
    with pytest.raises(InvalidArgumentError):
        substitute([None], VariableSet.of({}))  # type: ignore[list-item]


def test_placeholders_in_order_without_repeats() -> None:
    assert placeholders_in(["%b% %a%", "%b%", 3]) == ["b", "a"]


def test_descriptions_and_secrets() -> None:
    variables = {"user": "ada", "password": {"value": "s3cret!", "description": "the account password"}, "n": 7, "e": ""}
    checked = VariableSet.of(variables)
    assert checked.descriptions == {"user": "", "password": "the account password", "n": "", "e": ""}
    assert "s3cret!" not in repr(checked.descriptions) and "s3cret!" not in repr(checked)
    assert checked.secret_values() == ["s3cret!", "ada", "7"]
    assert VariableSet.of(None).secret_values() == [] and VariableSet.of(None).descriptions == {}
