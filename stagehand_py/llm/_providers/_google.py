"""Google Gemini through the official ``google-genai`` SDK (the Gemini API's ``generateContent``).

Structured output defaults to Gemini's native JSON mode: ``responseMimeType: application/json``
with the schema in ``responseJsonSchema``; ``tools`` mode forces one function call
(``functionCallingConfig.mode = ANY`` naming our output function); ``prompted`` puts the schema
in the system instruction. Gemini accepts a subset of JSON Schema, so the schema sent is adapted
by :func:`gemini_schema` (the answer is still validated against the full schema by the client,
and re-asked when it does not fit).
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from ..._errors import AuthenticationError, ProviderError
from ..._prompts.llm import OUTPUT_TOOL_DESCRIPTION, prompted_json_instructions
from ..._usage import Usage
from ..._util._schema import inline_refs
from .._messages import AssistantMessage, ImagePart, SystemMessage, TextPart, ToolCallPart, ToolMessage, UserMessage
from .._request import LLMRequest, ModelResponse
from ._common import HTTPProviderModel, add_turn, malformed_response_error, status_error, unsupported_tool_error

__all__ = ["GoogleModel", "gemini_schema", "GEMINI_API_VERSION"]

#: The Gemini API version the requests name (``/v1beta/models/<model>:generateContent``):
#: ``responseJsonSchema`` and function-call ids are there.
GEMINI_API_VERSION = "v1beta"

#: JSON Schema keywords Gemini's ``responseJsonSchema`` (and ``parametersJsonSchema``) accept;
#: everything else is dropped from the wire schema (the client still validates the full one).
_KEPT = frozenset({
    "$id", "$defs", "$ref", "$anchor", "type", "format", "title", "description", "enum", "items",
    "prefixItems", "minItems", "maxItems", "minimum", "maximum", "anyOf", "properties",
    "additionalProperties", "required", "propertyOrdering",
})
#: Keywords whose value is a map of names to schemas (the names are not keywords).
_SCHEMA_MAPS = frozenset({"properties", "$defs"})

#: The JSON Schema type of a ``const`` value, written next to the enum it becomes.
_JSON_TYPES: dict[type, str] = {str: "string", bool: "boolean", int: "integer", float: "number"}

#: Finish reasons that mean Gemini would not answer (a refusal, not a transport problem).
_REFUSED = frozenset({
    "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
    "IMAGE_PROHIBITED_CONTENT", "LANGUAGE",
})


def gemini_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` in the subset of JSON Schema Gemini accepts.

    - local ``$ref`` are inlined (recursive ones stay references, which Gemini resolves);
    - ``const: v`` becomes ``enum: [v]``, with v's type when none is given (pydantic writes the
      tag of a tagged union this way);
    - ``oneOf`` becomes ``anyOf``, and a one-element ``allOf`` is merged into its parent;
    - ``exclusiveMinimum``/``exclusiveMaximum`` become ``minimum``/``maximum`` (looser: the
      client's validation holds the exact bound);
    - anything else Gemini does not list (``default``, ``pattern``, ``not``, ``if``,
      ``discriminator``, ``minLength``...) is dropped.

    Dropping only loosens the wire schema: the client validates every answer against the
    schema as given and re-asks with the errors, so a dropped rule is still enforced.
    """
    adapted: dict[str, Any] = _adapt(inline_refs(schema))
    defs = schema.get("$defs")
    if isinstance(defs, dict) and _has_ref(adapted):  # recursive references still name $defs
        adapted["$defs"] = {name: _adapt(inline_refs({**sub, "$defs": defs})) if isinstance(sub, dict) else sub
                            for name, sub in defs.items()}
        for sub in adapted["$defs"].values():
            if isinstance(sub, dict):
                sub.pop("$defs", None)
    return adapted


def _has_ref(node: Any) -> bool:
    if isinstance(node, dict):
        return "$ref" in node or any(_has_ref(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_ref(v) for v in node)
    return False


def _adapt(node: Any) -> Any:
    if isinstance(node, list):
        return [_adapt(v) for v in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    all_of = node.pop("allOf", None)
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
        node = {**all_of[0], **node}
    if "oneOf" in node and "anyOf" not in node:
        node["anyOf"] = node.pop("oneOf")
    if "const" in node and "enum" not in node:
        value = node.pop("const")
        node["enum"] = [value]
        if "type" not in node and (kind := _JSON_TYPES.get(type(value))) is not None:
            node["type"] = kind  # Gemini reads an enum with its type
    for exclusive, inclusive in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(node.get(exclusive), int | float) and inclusive not in node:
            node[inclusive] = node[exclusive]
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key not in _KEPT:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _adapt(sub) for name, sub in value.items()}
        elif key == "additionalProperties":
            out[key] = _adapt(value) if isinstance(value, dict) else value
        else:
            out[key] = _adapt(value) if isinstance(value, dict | list) and key not in ("enum", "required") else value
    return out


class GoogleModel(HTTPProviderModel):
    """``google/<model>``: Gemini models on the Gemini API (``base_url`` for a proxy or a test server)."""

    provider = "google"

    # The one place this SDK's errors are named. The SDK raises the HTTP client's own
    # exceptions for timeouts and dropped connections; HTTP error answers are APIError.
    _sdk_errors = (genai_errors.APIError, httpx2.TransportError)
    _timeout_error = httpx2.TimeoutException
    _connection_error = httpx2.TransportError
    _status_error = genai_errors.APIError

    def _make_sdk(self, http_client: httpx2.AsyncClient | None) -> Any:
        options = genai_types.HttpOptions(
            base_url=self._base_url, api_version=GEMINI_API_VERSION,
            timeout=int(self._default_timeout() * 1000),
            retry_options=None,  # no SDK retries: tenacity in _retry.py is the only retry loop
            httpx_async_client=http_client,
        )
        # vertexai=False and api_key given: the SDK reads no credentials from the environment.
        return genai.Client(api_key=self._api_key, vertexai=False, http_options=options).aio

    def build_params(self, request: LLMRequest) -> dict[str, Any]:
        """The keyword arguments for ``models.generate_content`` (public for tests and logs)."""
        if request.tools:
            raise unsupported_tool_error(provider=self.provider, model=self.model_name, tool=request.tools[0],
                                         known=["no provider-defined tools (Gemini's computer use is not supported yet)"])
        schema = request.output_schema
        mode = self.profile.output_mode
        system, contents = to_gemini_contents(request)
        if schema is not None and mode == "prompted":
            system = f"{system}\n\n{prompted_json_instructions(schema)}" if system else prompted_json_instructions(schema)
        config: dict[str, Any] = {}
        if system:
            config["system_instruction"] = system
        if request.max_output_tokens is not None:
            config["max_output_tokens"] = request.max_output_tokens
        if request.temperature is not None:
            config["temperature"] = request.temperature
        if schema is not None and mode == "json_schema":
            config["response_mime_type"] = "application/json"
            config["response_json_schema"] = gemini_schema(schema)
        elif schema is not None and mode == "prompted":
            config["response_mime_type"] = "application/json"  # JSON mode without a schema
        elif schema is not None and mode == "tools":
            config["tools"] = [{"function_declarations": [{
                "name": request.output_name, "description": OUTPUT_TOOL_DESCRIPTION,
                "parameters_json_schema": gemini_schema(schema),
            }]}]
            config["tool_config"] = {"function_calling_config": {
                "mode": "ANY", "allowed_function_names": [request.output_name]}}
            config["automatic_function_calling"] = {"disable": True}
        return {"model": self.model_name, "contents": contents, "config": config}

    async def _create(self, params: dict[str, Any]) -> Any:
        timeout = params.pop("timeout", None)
        config = dict(params.get("config") or {})
        if timeout is not None:
            config["http_options"] = {"timeout": max(1, int(timeout * 1000))}
        return await self._sdk().models.generate_content(model=params["model"], contents=params["contents"], config=config)

    def _translate(self, exc: BaseException) -> ProviderError:
        if isinstance(exc, genai_errors.APIError):
            # The Gemini API answers a wrong key with 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
            bad_key = "API_KEY_INVALID" in json.dumps(exc.details, default=str)
            return status_error(provider=self.provider, model=self.model_name, status=int(exc.code or 0),
                                body=exc.details, fallback=str(exc), kind=AuthenticationError if bad_key else None)
        return super()._translate(exc)

    def _parse(self, raw: Any, request: LLMRequest) -> ModelResponse:
        candidates = getattr(raw, "candidates", None)
        common: dict[str, Any] = {
            "usage": _usage(getattr(raw, "usage_metadata", None)),
            "model": getattr(raw, "model_version", None) or self.model_name,
            "response_id": getattr(raw, "response_id", None),
        }
        if not candidates:
            feedback = getattr(raw, "prompt_feedback", None)
            blocked = getattr(feedback, "block_reason", None)
            if blocked is not None:
                reason = getattr(blocked, "value", blocked)
                detail = getattr(feedback, "block_reason_message", None)
                return ModelResponse(refusal=f"the prompt was blocked ({reason}{': ' + detail if detail else ''})",
                                     finish_reason=str(reason), **common)
            raise malformed_response_error(provider=self.provider, model=self.model_name, status=200,
                                           body=_dump(raw), detail="no candidates and no block reason")
        candidate = candidates[0]
        finish = getattr(candidate, "finish_reason", None)
        finish_reason = getattr(finish, "value", finish)
        common["finish_reason"] = finish_reason
        content = getattr(candidate, "content", None)
        parts = list(getattr(content, "parts", None) or [])
        texts = [p.text for p in parts if getattr(p, "text", None) and not getattr(p, "thought", False)]
        calls = [p.function_call for p in parts if getattr(p, "function_call", None) is not None]
        common["tool_calls"] = tuple(
            ToolCallPart(id=call.id or f"call_{i}", name=call.name or "", arguments=dict(call.args or {}))
            for i, call in enumerate(calls, 1)
        )
        if finish_reason in _REFUSED:
            return ModelResponse(refusal="\n".join(texts) or f"Gemini stopped the answer (finish reason {finish_reason})",
                                 **common)
        if request.output_schema is not None and self.profile.output_mode == "tools":
            for call in calls:
                if call.name == request.output_name:
                    return ModelResponse(output=dict(call.args or {}), **common)
        return ModelResponse(text="\n".join(texts) if texts else None, **common)


def _dump(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(mode="json", exclude_none=True) if callable(dump) else value


def _usage(raw: Any) -> Usage:
    if raw is None:
        return Usage(requests=1)
    thoughts = getattr(raw, "thoughts_token_count", 0) or 0
    return Usage(
        requests=1,
        # promptTokenCount includes the cached part; tool-use prompt tokens are input too.
        input_tokens=(getattr(raw, "prompt_token_count", 0) or 0) + (getattr(raw, "tool_use_prompt_token_count", 0) or 0),
        # Thinking is billed as output; it is reported apart from the answer's tokens.
        output_tokens=(getattr(raw, "candidates_token_count", 0) or 0) + thoughts,
        cached_tokens=getattr(raw, "cached_content_token_count", 0) or 0,
        reasoning_tokens=thoughts,
    )


def _image(part: ImagePart) -> dict[str, Any]:
    return {"inline_data": {"mime_type": part.media_type, "data": part.data}}


def to_gemini_contents(request: LLMRequest) -> tuple[str, list[dict[str, Any]]]:
    """The system instruction and the ``contents`` turns (``user``/``model``; tool results
    travel as ``functionResponse`` parts in user turns, named after the call they answer)."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    call_names: dict[str, str] = {}

    def add(role: str, parts: list[dict[str, Any]]) -> None:
        if parts:  # Gemini rejects a turn without parts
            add_turn(out, role, parts, key="parts")

    for message in request.messages:
        if isinstance(message, SystemMessage):
            system.append("\n".join(p.text for p in message.content))
        elif isinstance(message, UserMessage):
            add("user", [{"text": p.text} if isinstance(p, TextPart) else _image(p)
                         for p in message.content if isinstance(p, TextPart | ImagePart)])
        elif isinstance(message, AssistantMessage):
            parts: list[dict[str, Any]] = []
            for a in message.content:
                if isinstance(a, TextPart) and a.text:
                    parts.append({"text": a.text})
                elif isinstance(a, ToolCallPart):
                    call_names[a.id] = a.name
                    parts.append({"function_call": {"id": a.id, "name": a.name, "args": a.arguments}})
            add("model", parts)
        elif isinstance(message, ToolMessage):
            parts = []
            for r in message.content:
                text = r.text
                parts.append({"function_response": {
                    "id": r.tool_call_id, "name": call_names.get(r.tool_call_id, r.tool_call_id),
                    "response": {"error": text} if r.is_error else {"output": text},
                }})
                parts.extend(_image(image) for image in r.images)
            add("user", parts)
    return "\n\n".join(system), out

