"""Models that answer without a network: for users' tests and for ours.

Both go through the real :class:`~stagehand_py.llm.LLMClient` machinery (validation,
re-asks, usage, capture), so a test with a double exercises the same code as production.
"""

from __future__ import annotations

import inspect
import json
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeAlias

import jsonschema
from pydantic import BaseModel

from .._errors import TestDoubleError
from .._usage import Usage, estimate_tokens
from ..llm._messages import message_text
from ..llm._request import LLMRequest, ModelResponse

__all__ = ["FunctionLLM", "ScriptedLLM", "Answer"]

#: What a double may answer with: data (dict/list/pydantic instance) or raw text.
Answer: TypeAlias = "dict[str, Any] | list[Any] | BaseModel | str | ModelResponse"


def _estimated_usage(request: LLMRequest, answer: str) -> Usage:
    """Deterministic token counts (chars/4), so usage limits and metrics are testable."""
    prompt = "".join(message_text(m) for m in request.messages)
    if request.output_schema is not None:
        prompt += json.dumps(request.output_schema)
    return Usage(requests=1, input_tokens=estimate_tokens(prompt), output_tokens=estimate_tokens(answer))


def _to_response(request: LLMRequest, answer: Answer, model_name: str) -> ModelResponse:
    if isinstance(answer, ModelResponse):
        return answer
    if isinstance(answer, str):
        return ModelResponse(text=answer, usage=_estimated_usage(request, answer), model=model_name)
    data = answer.model_dump(mode="json") if isinstance(answer, BaseModel) else answer
    if request.output_schema is not None and _wrapped(request.output_schema) and not _is_wrapper(data):
        data = {"value": data}
    return ModelResponse(output=data, usage=_estimated_usage(request, json.dumps(data, default=str)), model=model_name)


def _wrapped(schema: dict[str, Any]) -> bool:
    return schema.get("required") == ["value"] and set(schema.get("properties", {})) == {"value"}


def _is_wrapper(data: Any) -> bool:
    return isinstance(data, dict) and set(data) == {"value"}


class FunctionLLM:
    """A model whose answers come from ``fn(request)``, sync or async.

    ``fn`` reads ``request.messages``, ``request.purpose`` and ``request.output_schema`` and
    returns a dict (or pydantic instance) matching the schema, or a string (raw text, parsed as
    JSON by the client, so you can also test malformed answers), or a full ``ModelResponse``.
    Usage is estimated at four characters a token.
    """

    is_test_double = True

    def __init__(
        self,
        fn: Callable[[LLMRequest], Answer | Awaitable[Answer]],
        *,
        model_name: str = "function",
    ) -> None:
        self.fn = fn
        self.model_name = model_name
        self.requests: list[LLMRequest] = []

    def __repr__(self) -> str:
        return f"FunctionLLM({getattr(self.fn, '__name__', self.fn)!r})"

    async def request(self, request: LLMRequest) -> ModelResponse:
        self.requests.append(request)
        answer = self.fn(request)
        if inspect.isawaitable(answer):
            answer = await answer
        return _to_response(request, answer, self.model_name)


class ScriptedLLM:
    """A model that replays a queue of answers, one per request, and fails clearly.

    Items are data (dict/list/pydantic instance; checked against the request's schema, a
    mismatch raises :class:`TestDoubleError` at once), raw text strings (passed to the client
    unchecked, for testing malformed or invalid answers and the re-ask path), a
    ``ModelResponse``, or an exception instance (raised, e.g. ``RateLimitError(...)`` to test
    retries). Running out raises :class:`TestDoubleError` naming the request's purpose.
    """

    is_test_double = True

    def __init__(self, answers: Iterable[Answer | BaseException], *, model_name: str = "scripted", check_schema: bool = True) -> None:
        self._queue: deque[Answer | BaseException] = deque(answers)
        self.model_name = model_name
        self.check_schema = check_schema
        self.requests: list[LLMRequest] = []

    def __repr__(self) -> str:
        return f"ScriptedLLM(remaining={len(self._queue)})"

    @property
    def remaining(self) -> int:
        return len(self._queue)

    def add(self, *answers: Answer | BaseException) -> None:
        self._queue.extend(answers)

    def assert_exhausted(self) -> None:
        """Fail if scripted answers were left unused (the code made fewer calls than planned)."""
        if self._queue:
            raise TestDoubleError(f"ScriptedLLM has {len(self._queue)} unused answer(s); the code made fewer model requests than scripted.")

    async def request(self, request: LLMRequest) -> ModelResponse:
        self.requests.append(request)
        if not self._queue:
            raise TestDoubleError(
                f"ScriptedLLM ran out of answers at request {len(self.requests)} (purpose {request.purpose!r}, "
                f"attempt {request.attempt}). Script one more answer, or check why the code asked again."
            )
        item = self._queue.popleft()
        if isinstance(item, BaseException):
            raise item
        response = _to_response(request, item, self.model_name)
        if self.check_schema and request.output_schema is not None and response.output is not None:
            errors = list(jsonschema.validators.validator_for(request.output_schema)(request.output_schema).iter_errors(response.output))
            if errors:
                raise TestDoubleError(
                    f"ScriptedLLM answer {len(self.requests)} does not fit the {request.output_name!r} schema of "
                    f"the {request.purpose!r} request: {errors[0].message}. Fix the scripted answer, or script it as "
                    "a JSON string to test how invalid output is handled."
                )
        return response
