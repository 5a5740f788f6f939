"""The request every model receives, the response it returns, and the model Protocol.

A model (a provider adapter, a test double, or a user's own object) sees one
:class:`LLMRequest` per attempt and returns one :class:`ModelResponse`; validation, re-asks,
retries, usage and logging are the client's job, so a custom model stays a few lines.
"""

from __future__ import annotations

import json
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from .._usage import Usage, estimate_tokens
from ._messages import ImagePart, Message, ToolCallPart, ToolResultPart, message_text

__all__ = [
    "LLMRequest",
    "ModelResponse",
    "LanguageModel",
    "ComputerTool",
    "ProviderTool",
    "ANTHROPIC_COMPUTER_BETAS",
    "estimate_input_tokens",
]

#: An image costs roughly this many input tokens; only used for estimates (limits, timeouts).
_IMAGE_TOKEN_ESTIMATE = 1000

#: The ``anthropic-beta`` header each version of Anthropic's computer tool needs.
ANTHROPIC_COMPUTER_BETAS: dict[str, str] = {
    "computer_20241022": "computer-use-2024-10-22",
    "computer_20250124": "computer-use-2025-01-24",
    "computer_20251124": "computer-use-2025-11-24",
}


class ComputerTool(BaseModel):
    """A provider-defined computer-use tool: the model sees screenshots of a display of this
    size (pixels) and answers with native coordinate actions in :attr:`ModelResponse.tool_calls`.

    Anthropic gets ``{"type": anthropic_type, "name": "computer", "display_width_px": ...,
    "display_height_px": ...}`` on the beta Messages API with its ``anthropic-beta`` header;
    OpenAI gets ``{"type": "computer_use_preview", "display_width": ..., "display_height": ...,
    "environment": ...}`` on the Responses API.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["computer"] = "computer"
    display_width: int = Field(gt=0)
    display_height: int = Field(gt=0)
    environment: Literal["browser", "mac", "windows", "linux", "ubuntu"] = "browser"
    #: Anthropic's tool version (a key of :data:`ANTHROPIC_COMPUTER_BETAS`).
    anthropic_type: str = "computer_20250124"

    @property
    def name(self) -> str:
        return "computer"


#: Provider-defined tools a request may offer (only the computer tool so far).
ProviderTool: TypeAlias = ComputerTool


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
    #: Provider-defined tools offered to the model (answers come back as ``tool_calls``).
    tools: tuple[ProviderTool, ...] = ()
    #: Continue a stored provider conversation (OpenAI Responses API): ``messages`` then hold
    #: only the new input (tool results, a user turn) and the system prompt.
    previous_response_id: str | None = None


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
    #: The calls of provider-defined tools (and other tools) the model made, in order.
    tool_calls: tuple[ToolCallPart, ...] = ()
    #: The provider's id of this response (OpenAI Responses API: the next turn's
    #: ``previous_response_id``).
    response_id: str | None = None


@runtime_checkable
class LanguageModel(Protocol):
    """Implement this to plug any model into :class:`LLMClient`.

    ``model_name`` names it in errors, logs and metrics. Set ``is_test_double = True`` on a
    fake so that :func:`stagehand_py.testing.block_model_requests` lets it through; any other
    model counts as a real one and is blocked by the kill switch.
    """

    model_name: str

    async def request(self, request: LLMRequest) -> ModelResponse: ...


def estimate_input_tokens(request: LLMRequest) -> int:
    """About how many tokens the model reads for ``request`` (messages, images, schema), before
    it is sent: for usage limits and for time bounds that grow with the prompt."""
    tokens = sum(estimate_tokens(message_text(m)) for m in request.messages)
    tokens += _IMAGE_TOKEN_ESTIMATE * sum(
        1 if isinstance(p, ImagePart) else len(p.images)
        for m in request.messages for p in m.content if isinstance(p, ImagePart | ToolResultPart)
    )
    if request.output_schema is not None:
        tokens += estimate_tokens(json.dumps(request.output_schema))
    return tokens
