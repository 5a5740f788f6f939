"""OpenAI chat completions, and every OpenAI-compatible server through ``base_url``.

One adapter, configured (not subclassed) for Ollama, llama.cpp server, vLLM or LM Studio:
only the profile (structured-output mode) and the key requirement differ. Requests offering
provider-defined tools (computer use) go to the Responses API instead (:mod:`._openai_responses`).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import openai

from ..._prompts.llm import OUTPUT_TOOL_DESCRIPTION, prompted_json_instructions
from .._messages import AssistantMessage, ImagePart, SystemMessage, TextPart, ToolCallPart, ToolMessage, UserMessage
from .._request import LLMRequest, ModelResponse
from ._common import HTTPProviderModel, malformed_response_error, openai_usage
from ._openai_responses import parse_response, responses_params, uses_responses_api

__all__ = ["OpenAIChatModel"]


class OpenAIChatModel(HTTPProviderModel):
    """``openai/<model>``: the Chat Completions API of OpenAI or a compatible server."""

    provider = "openai"

    _sdk_class = openai.AsyncOpenAI
    # The one place this SDK's errors are named; HTTPProviderModel._translate maps them.
    _sdk_errors = (openai.OpenAIError,)
    _timeout_error = openai.APITimeoutError
    _connection_error = openai.APIConnectionError
    _status_error = openai.APIStatusError

    def build_params(self, request: LLMRequest) -> dict[str, Any]:
        """The keyword arguments for ``chat.completions.create`` (public for tests and logs), or
        for ``responses.create`` when the request offers provider-defined tools."""
        if uses_responses_api(request):
            return responses_params(request, model=self.model_name, provider=self.provider)
        schema = request.output_schema
        mode = self.profile.output_mode
        extra_system = prompted_json_instructions(schema) if schema is not None and mode == "prompted" else None
        params: dict[str, Any] = {"model": self.model_name, "messages": to_openai_messages(request, extra_system)}
        if request.max_output_tokens is not None:
            params[self._max_tokens_key()] = request.max_output_tokens
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if schema is not None and mode == "json_schema" and self.profile.response_format == "json_object":
            # llama_cpp.server's form: it builds a grammar from the schema (and 500s on json_schema).
            params["response_format"] = {"type": "json_object", "schema": schema}
        elif schema is not None and mode == "json_schema":
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.output_name, "schema": schema, "strict": self.profile.strict_schema},
            }
        elif schema is not None and mode == "tools":
            function: dict[str, Any] = {
                "name": request.output_name,
                "description": OUTPUT_TOOL_DESCRIPTION,
                "parameters": schema,
            }
            if self.profile.strict_schema:
                function["strict"] = True
            params["tools"] = [{"type": "function", "function": function}]
            params["tool_choice"] = {"type": "function", "function": {"name": request.output_name}}
        return params

    def _max_tokens_key(self) -> str:
        # OpenAI's own API names it max_completion_tokens; compatible servers know max_tokens.
        return "max_tokens" if self._base_url is not None else "max_completion_tokens"

    async def _create(self, params: dict[str, Any]) -> Any:
        if "input" in params:  # built by responses_params
            return await self._sdk().responses.create(**params)
        return await self._sdk().chat.completions.create(**params)

    def _parse(self, completion: Any, request: LLMRequest) -> ModelResponse:
        if uses_responses_api(request):
            return parse_response(completion, model=self.model_name, provider=self.provider)
        choices = getattr(completion, "choices", None)
        if not choices:
            raise malformed_response_error(
                provider=self.provider, model=self.model_name, status=200,
                body=completion if isinstance(completion, str) else _dump(completion),
                detail="no choices in a chat completion",
            )
        choice = choices[0]
        message = choice.message
        usage = openai_usage(getattr(completion, "usage", None))
        common: dict[str, Any] = {"usage": usage, "model": getattr(completion, "model", None) or self.model_name,
                                  "finish_reason": getattr(choice, "finish_reason", None)}
        if getattr(message, "refusal", None):
            return ModelResponse(refusal=message.refusal, **common)
        if request.output_schema is not None and self.profile.output_mode == "tools":
            for call in getattr(message, "tool_calls", None) or []:
                function = getattr(call, "function", None)
                if function is not None and function.name == request.output_name:
                    return ModelResponse(text=function.arguments, **common)
        return ModelResponse(text=message.content, **common)


def _dump(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump() if callable(dump) else value


def to_openai_messages(request: LLMRequest, extra_system: str | None) -> list[dict[str, Any]]:
    """Our messages in Chat Completions form; ``extra_system`` joins the system prompt."""
    out: list[dict[str, Any]] = []
    system_done = extra_system is None
    for message in request.messages:
        if isinstance(message, SystemMessage):
            text = "\n".join(p.text for p in message.content)
            if not system_done:
                text = f"{text}\n\n{extra_system}"
                system_done = True
            out.append({"role": "system", "content": text})
        elif isinstance(message, UserMessage):
            if all(isinstance(p, TextPart) for p in message.content):
                out.append({"role": "user", "content": "\n".join(p.text for p in message.content if isinstance(p, TextPart))})
            else:
                parts: list[dict[str, Any]] = []
                for p in message.content:
                    if isinstance(p, TextPart):
                        parts.append({"type": "text", "text": p.text})
                    elif isinstance(p, ImagePart):
                        url = f"data:{p.media_type};base64,{base64.b64encode(p.data).decode('ascii')}"
                        parts.append({"type": "image_url", "image_url": {"url": url}})
                out.append({"role": "user", "content": parts})
        elif isinstance(message, AssistantMessage):
            text = "\n".join(p.text for p in message.content if isinstance(p, TextPart))
            entry: dict[str, Any] = {"role": "assistant", "content": text or None}
            calls = [p for p in message.content if isinstance(p, ToolCallPart)]
            if calls:
                entry["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                    for c in calls
                ]
            out.append(entry)
        elif isinstance(message, ToolMessage):
            for r in message.content:
                out.append({"role": "tool", "tool_call_id": r.tool_call_id, "content": r.text})
    if not system_done:
        out.insert(0, {"role": "system", "content": extra_system})
    return out
