"""Anthropic Messages API.

Structured output defaults to one forced tool call (``tool_choice`` names our output tool);
``json_schema`` mode uses ``output_config.format``; ``prompted`` puts the schema in the
system prompt.

Provider-defined tools (:class:`~stagehand_py.llm.ComputerTool`) go to the beta Messages API
with the tool version's ``anthropic-beta`` header; every ``tool_use`` block comes back in
:attr:`ModelResponse.tool_calls`, and screenshots return as image blocks inside ``tool_result``.
"""

from __future__ import annotations

import base64
from typing import Any

import anthropic

from ..._prompts.llm import OUTPUT_TOOL_DESCRIPTION, prompted_json_instructions
from ..._usage import Usage
from .._messages import AssistantMessage, ImagePart, SystemMessage, TextPart, ToolCallPart, ToolMessage, UserMessage
from .._request import ANTHROPIC_COMPUTER_BETAS, ComputerTool, LLMRequest, ModelResponse
from ._common import HTTPProviderModel, add_turn, malformed_response_error, unsupported_tool_error

__all__ = ["AnthropicModel"]


class AnthropicModel(HTTPProviderModel):
    """``anthropic/<model>``."""

    provider = "anthropic"

    _sdk_class = anthropic.AsyncAnthropic
    # The one place this SDK's errors are named; HTTPProviderModel._translate maps them.
    _sdk_errors = (anthropic.AnthropicError,)
    _timeout_error = anthropic.APITimeoutError
    _connection_error = anthropic.APIConnectionError
    _status_error = anthropic.APIStatusError

    def build_params(self, request: LLMRequest) -> dict[str, Any]:
        """The keyword arguments for ``messages.create`` (public for tests and logs)."""
        schema = request.output_schema
        mode = self.profile.output_mode
        system, messages = to_anthropic_messages(request)
        if schema is not None and mode == "prompted":
            system = f"{system}\n\n{prompted_json_instructions(schema)}" if system else prompted_json_instructions(schema)
        params: dict[str, Any] = {
            "model": self.model_name,
            "max_tokens": request.max_output_tokens or self.profile.max_output_tokens,
            "messages": messages,
        }
        if system:
            params["system"] = system
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if schema is not None and mode == "tools":
            tool: dict[str, Any] = {"name": request.output_name, "description": OUTPUT_TOOL_DESCRIPTION, "input_schema": schema}
            if self.profile.strict_schema:
                tool["strict"] = True
            params["tools"] = [tool]
            params["tool_choice"] = {"type": "tool", "name": request.output_name}
        elif schema is not None and mode == "json_schema":
            params["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
        if request.tools:
            native, betas = self._native_tools(request)
            params["tools"] = [*native, *params.get("tools", [])]
            params.pop("tool_choice", None)  # forcing the output tool would forbid the others
            params["betas"] = betas
        return params

    def _native_tools(self, request: LLMRequest) -> tuple[list[dict[str, Any]], list[str]]:
        tools: list[dict[str, Any]] = []
        betas: list[str] = []
        for tool in request.tools:
            if not isinstance(tool, ComputerTool) or tool.anthropic_type not in ANTHROPIC_COMPUTER_BETAS:
                raise unsupported_tool_error(provider=self.provider, model=self.model_name, tool=tool,
                                             known=sorted(ANTHROPIC_COMPUTER_BETAS))
            tools.append({"type": tool.anthropic_type, "name": tool.name,
                          "display_width_px": tool.display_width, "display_height_px": tool.display_height})
            beta = ANTHROPIC_COMPUTER_BETAS[tool.anthropic_type]
            if beta not in betas:
                betas.append(beta)
        return tools, betas

    async def _create(self, params: dict[str, Any]) -> Any:
        if "betas" in params:  # provider-defined tools live on the beta API (sends anthropic-beta)
            return await self._sdk().beta.messages.create(**params)
        return await self._sdk().messages.create(**params)

    def _parse(self, message: Any, request: LLMRequest) -> ModelResponse:
        content = getattr(message, "content", None)
        if content is None:
            raise malformed_response_error(
                provider=self.provider, model=self.model_name, status=200,
                body=message if isinstance(message, str) else None, detail="no content list in a message",
            )
        stop_reason = getattr(message, "stop_reason", None)
        common: dict[str, Any] = {
            "usage": _usage(getattr(message, "usage", None)),
            "model": getattr(message, "model", None) or self.model_name,
            "finish_reason": stop_reason,
        }
        texts = [b.text for b in content if getattr(b, "type", None) == "text"]
        common["tool_calls"] = tuple(
            ToolCallPart(id=b.id, name=b.name, arguments=dict(b.input or {}))
            for b in content if getattr(b, "type", None) == "tool_use"
        )
        common["response_id"] = getattr(message, "id", None)
        if stop_reason == "refusal":
            return ModelResponse(refusal="\n".join(texts) or "refused (stop_reason=refusal)", **common)
        if request.output_schema is not None and self.profile.output_mode == "tools":
            for block in content:
                if getattr(block, "type", None) == "tool_use" and block.name == request.output_name:
                    return ModelResponse(output=block.input, **common)
        return ModelResponse(text="\n".join(texts) if texts else None, **common)


def _usage(raw: Any) -> Usage:
    if raw is None:
        return Usage(requests=1)
    cache_read = getattr(raw, "cache_read_input_tokens", 0) or 0
    cache_write = getattr(raw, "cache_creation_input_tokens", 0) or 0
    return Usage(
        requests=1,
        # Anthropic counts cached input apart; our input_tokens is all input.
        input_tokens=(getattr(raw, "input_tokens", 0) or 0) + cache_read + cache_write,
        output_tokens=getattr(raw, "output_tokens", 0) or 0,
        cached_tokens=cache_read,
    )


def _image_block(part: ImagePart) -> dict[str, Any]:
    return {"type": "image", "source": {
        "type": "base64", "media_type": part.media_type, "data": base64.b64encode(part.data).decode("ascii")}}


def _result_content(content: str | tuple[TextPart | ImagePart, ...]) -> str | list[dict[str, Any]]:
    """A tool result's content: text as is, or text and image blocks (computer-use screenshots)."""
    if isinstance(content, str):
        return content
    return [{"type": "text", "text": p.text} if isinstance(p, TextPart) else _image_block(p) for p in content]


def to_anthropic_messages(request: LLMRequest) -> tuple[str, list[dict[str, Any]]]:
    """The system prompt and the Messages API turns (tool results travel in user turns)."""
    system: list[str] = []
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        add_turn(out, role, blocks)

    for message in request.messages:
        if isinstance(message, SystemMessage):
            system.append("\n".join(p.text for p in message.content))
        elif isinstance(message, UserMessage):
            blocks: list[dict[str, Any]] = []
            for p in message.content:
                if isinstance(p, TextPart):
                    blocks.append({"type": "text", "text": p.text})
                elif isinstance(p, ImagePart):
                    blocks.append(_image_block(p))
            add("user", blocks)
        elif isinstance(message, AssistantMessage):
            blocks = []
            for a in message.content:
                if isinstance(a, TextPart):
                    if a.text:
                        blocks.append({"type": "text", "text": a.text})
                elif isinstance(a, ToolCallPart):
                    blocks.append({"type": "tool_use", "id": a.id, "name": a.name, "input": a.arguments})
            add("assistant", blocks)
        elif isinstance(message, ToolMessage):
            add("user", [{"type": "tool_result", "tool_use_id": r.tool_call_id, "content": _result_content(r.content),
                          "is_error": r.is_error} for r in message.content])
    return "\n\n".join(system), out
