"""The request every model receives, the response it returns, and the model Protocol.

A model (a provider adapter, a test double, or a user's own object) sees one
:class:`LLMRequest` per attempt and returns one :class:`ModelResponse`; validation, re-asks,
retries, usage and logging are the client's job, so a custom model stays a few lines.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ._messages import Message
from ._usage import Usage

__all__ = ["LLMRequest", "ModelResponse", "LanguageModel"]


class LLMRequest(BaseModel):
    """One call to a model.

    ``output_schema`` is the JSON Schema the answer must match (``None``: free text). It is
    always an object schema: the client wraps other shapes under ``"value"`` because tool
    calling and native JSON-schema modes require an object at the top.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    messages: tuple[Message, ...]
    purpose: str = "generic"
    output_schema: dict[str, Any] | None = None
    #: A short identifier for the output (tool / schema name), e.g. ``"observe_result"``.
    output_name: str = "result"
    #: 1 for the first answer, 2 after the first re-ask, ...
    attempt: int = 1
    max_output_tokens: int | None = None
    temperature: float | None = None


class ModelResponse(BaseModel):
    """What a model answered.

    Give ``output`` when the model already produced structured data (a dict, list or pydantic
    instance: tool calls, test doubles); give ``text`` when it answered with text, which the
    client parses as JSON when a schema was asked for. ``refusal`` marks an explicit refusal.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    output: Any = None
    text: str | None = None
    refusal: str | None = None
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    finish_reason: str | None = None


@runtime_checkable
class LanguageModel(Protocol):
    """Implement this to plug any model into :class:`LLMClient`.

    ``model_name`` names it in errors, logs and metrics. Set ``is_test_double = True`` on a
    fake so that :func:`stagehand_py.testing.block_model_requests` lets it through; any other
    model counts as a real one and is blocked by the kill switch.
    """

    model_name: str

    async def request(self, request: LLMRequest) -> ModelResponse: ...
