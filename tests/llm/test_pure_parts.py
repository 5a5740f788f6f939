"""Pure pieces without I/O: retry-after parsing, limits, redaction, JSON extraction."""

from __future__ import annotations

import email.utils
import time

import httpx2
import pytest

from stagehand_py import RateLimitError, UsageLimitExceededError
from stagehand_py.llm import Redactor, Usage, UsageLimits
from stagehand_py.llm._retry import retry_after_seconds
from stagehand_py.llm._structured import InvalidOutput, parse_json_text


def _error_with_headers(headers: dict[str, str]) -> RateLimitError:
    class SdkError(Exception):
        def __init__(self) -> None:
            super().__init__("429")
            self.response = httpx2.Response(429, headers=headers)

    err = RateLimitError("rl", provider="p", model="m", status=429)
    err.__cause__ = SdkError()
    return err


def test_retry_after_forms() -> None:
    assert retry_after_seconds(_error_with_headers({"retry-after-ms": "250"})) == 0.25
    assert retry_after_seconds(_error_with_headers({"retry-after": "3"})) == 3.0
    date = email.utils.formatdate(time.time() + 10, usegmt=True)
    assert 8 <= (retry_after_seconds(_error_with_headers({"retry-after": date})) or 0) <= 10
    assert retry_after_seconds(_error_with_headers({})) is None
    assert retry_after_seconds(_error_with_headers({"retry-after": "soon"})) is None


def test_output_token_limit_stops_once_reached() -> None:
    limits = UsageLimits(max_output_tokens=10)
    limits.check_before(Usage(output_tokens=9), next_input_estimate=0)
    with pytest.raises(UsageLimitExceededError, match="max_output_tokens=10"):
        limits.check_before(Usage(output_tokens=10), next_input_estimate=0)


def test_redactor_longest_first_and_nested() -> None:
    r = Redactor(["abc", "abcdef", ""])
    assert r.text("x abcdef y abc") == "x %secret% y %secret%"
    assert r.data({"abc": ["abcdef", 1, None]}) == {"%secret%": ["%secret%", 1, None]}
    assert Redactor().text("abc") == "abc"


def test_parse_json_text_tolerates_fences_and_prose_but_not_garbage() -> None:
    assert parse_json_text('```\n{"a": 1}\n```') == {"a": 1}
    assert parse_json_text('The answer is [1, 2].') == [1, 2]
    with pytest.raises(InvalidOutput, match="not valid JSON"):
        parse_json_text("no json here")
