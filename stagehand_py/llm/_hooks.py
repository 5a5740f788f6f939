"""The test seams: kill switch, request capture, cassettes, as wrappers composed around a model.

Each seam is a :class:`~stagehand_py.llm.LanguageModel` around another one (as an httpx
transport wraps a transport): :class:`KillSwitch` refuses a real request while the switch is on,
:class:`Capture` records each request with its answer or error, :class:`AtCassette` answers an
in-process model's request from the active cassette. The client composes them; it has no branch
of its own for any of them. The switches they read are context variables, turned on by the
public context managers of :mod:`stagehand_py.testing` (not module globals, so concurrent tests
and tasks do not see each other's switches), and read at request time.
"""

from __future__ import annotations

import os
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from .._errors import ModelRequestBlockedError
from ._request import LanguageModel, LLMRequest, ModelResponse

__all__ = [
    "AtCassette",
    "BLOCK_ENV_VAR",
    "Capture",
    "KillSwitch",
    "CapturedCall",
    "block_switch",
    "capture_sinks",
    "active_transport",
    "model_requests_blocked",
]

#: Set to 1/true/yes to block real model requests for a whole process (read at request time).
BLOCK_ENV_VAR = "STAGEHAND_BLOCK_MODEL_REQUESTS"

block_switch: ContextVar[bool] = ContextVar("stagehand_block_model_requests", default=False)
capture_sinks: ContextVar[tuple[list[CapturedCall], ...]] = ContextVar("stagehand_capture_sinks", default=())
#: An httpx2 transport factory (a cassette) that provider adapters use while it is set.
active_transport: ContextVar[Any] = ContextVar("stagehand_active_transport", default=None)


def model_requests_blocked() -> bool:
    """True inside ``block_model_requests()`` or when the env var is set, checked now."""
    if block_switch.get():
        return True
    return os.environ.get(BLOCK_ENV_VAR, "").strip().lower() in {"1", "true", "yes", "on"}


@dataclass
class CapturedCall:
    """One model request seen by :func:`stagehand_py.testing.capture_requests`."""

    request: LLMRequest
    model: str
    response: ModelResponse | None = None
    error: BaseException | None = None
    #: Free for later layers; unused by the client.
    extra: dict[str, Any] = field(default_factory=dict)


def is_test_double(model: object) -> bool:
    """A fake (``is_test_double = True``): the kill switch lets it through, cassettes skip it."""
    return bool(getattr(model, "is_test_double", False))


class _Around:
    """A model around ``inner``, named after the model the user configured (``label``)."""

    def __init__(self, inner: LanguageModel, *, label: str) -> None:
        self.inner = inner
        self.model_name = label
        self.is_test_double = is_test_double(inner)


class KillSwitch(_Around):
    """Refuses a request to a real model inside ``block_model_requests()`` or while
    :data:`BLOCK_ENV_VAR` is set; test doubles and cassette replays still answer."""

    async def request(self, request: LLMRequest) -> ModelResponse:
        replaying = bool(getattr(active_transport.get(), "replaying", False))
        if not self.is_test_double and not replaying and model_requests_blocked():
            raise ModelRequestBlockedError(
                f"a real model request to {self.model_name} (purpose {request.purpose!r}) was blocked: "
                f"block_model_requests() is active or {BLOCK_ENV_VAR} is set. Use FunctionLLM or "
                "ScriptedLLM from stagehand_py.testing, or replay a cassette."
            )
        return await self.inner.request(request)


class Capture(_Around):
    """Hands each request, then its answer or error, to every active ``capture_requests()``."""

    async def request(self, request: LLMRequest) -> ModelResponse:
        captured = CapturedCall(request=request, model=self.model_name)
        for sink in capture_sinks.get():
            sink.append(captured)
        try:
            captured.response = await self.inner.request(request)
        except BaseException as exc:
            captured.error = exc
            raise
        return captured.response


class AtCassette(_Around):
    """While a cassette is active, answers an in-process or custom model's request from it
    (or records the model's answer): such models have no HTTP for the cassette to record. HTTP
    adapters (``records_over_http``) and test doubles go straight to the model."""

    def __init__(self, inner: LanguageModel, *, label: str) -> None:
        super().__init__(inner, label=label)
        self._recordable = not self.is_test_double and not getattr(inner, "records_over_http", False)

    async def request(self, request: LLMRequest) -> ModelResponse:
        cassette = active_transport.get()
        if cassette is not None and self._recordable:
            answered: ModelResponse = await cassette.answer(request, self.inner)
            return answered
        return await self.inner.request(request)
