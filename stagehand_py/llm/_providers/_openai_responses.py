"""OpenAI's Responses API: the wire format of provider-defined tools (computer use).

:class:`~stagehand_py.llm._providers._openai.OpenAIChatModel` sends a request here when it
offers :class:`~stagehand_py.llm.ComputerTool` or continues a stored conversation
(``previous_response_id``); everything else stays on Chat Completions. Errors are translated
by the adapter's one ``except`` clause, as for chat completions.

Our messages map to input items: the system prompt becomes ``instructions``, a user turn a
``message`` with ``input_text``/``input_image`` parts, a tool result carrying a screenshot a
``computer_call_output`` (``computer_screenshot`` image plus ``acknowledged_safety_checks``),
a text-only tool result a ``function_call_output``. In the answer, ``computer_call`` and
``function_call`` items become :class:`ToolCallPart` (a computer call's ``pending_safety_checks``
travel on the part), ``message`` items the text or refusal.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from .._messages import (
    AssistantMessage,
    ImagePart,
    PendingSafetyCheck,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolMessage,
    ToolResultPart,
    UserMessage,
)
from .._request import ComputerTool, LLMRequest, ModelResponse
from ._common import malformed_response_error, openai_usage, unsupported_tool_error

__all__ = ["parse_response", "responses_params", "uses_responses_api"]

#: The name our :class:`ToolCallPart` gives OpenAI's computer calls (Anthropic's tool name).
COMPUTER = "computer"


def uses_responses_api(request: LLMRequest) -> bool:
    return bool(request.tools) or request.previous_response_id is not None


def _data_url(part: ImagePart) -> str:
    return f"data:{part.media_type};base64,{base64.b64encode(part.data).decode('ascii')}"


def _checks(checks: tuple[PendingSafetyCheck, ...]) -> list[dict[str, Any]]:
    return [c.model_dump(exclude_none=True) for c in checks]


def _result_items(result: ToolResultPart) -> list[dict[str, Any]]:
    images = result.images
    if not images:
        return [{"type": "function_call_output", "call_id": result.tool_call_id, "output": result.text}]
    item: dict[str, Any] = {
        "type": "computer_call_output",
        "call_id": result.tool_call_id,
        "output": {"type": "computer_screenshot", "image_url": _data_url(images[0])},
    }
    if result.acknowledged_safety_checks:
        item["acknowledged_safety_checks"] = _checks(result.acknowledged_safety_checks)
    items = [item]
    extra: list[dict[str, Any]] = [{"type": "input_text", "text": result.text}] if result.text else []
    extra += [{"type": "input_image", "image_url": _data_url(p)} for p in images[1:]]
    if extra:  # a computer_call_output holds one screenshot and no text: the rest follows as a user turn
        items.append({"role": "user", "content": extra})
    return items


def to_response_input(request: LLMRequest) -> tuple[str | None, list[dict[str, Any]]]:
    """The ``instructions`` (system prompt) and the input items of a request."""
    system: list[str] = []
    items: list[dict[str, Any]] = []
    for message in request.messages:
        if isinstance(message, SystemMessage):
            system.append("\n".join(p.text for p in message.content))
        elif isinstance(message, UserMessage):
            content = [
                {"type": "input_text", "text": p.text} if isinstance(p, TextPart)
                else {"type": "input_image", "image_url": _data_url(p)}
                for p in message.content
            ]
            items.append({"role": "user", "content": content})
        elif isinstance(message, AssistantMessage):
            text = "\n".join(p.text for p in message.content if isinstance(p, TextPart) and p.text)
            if text:
                items.append({"role": "assistant", "content": text})
            for call in message.content:
                if not isinstance(call, ToolCallPart):
                    continue
                if call.name == COMPUTER:
                    items.append({"type": "computer_call", "call_id": call.id, "action": call.arguments,
                                  "pending_safety_checks": _checks(call.safety_checks), "status": "completed"})
                else:
                    items.append({"type": "function_call", "call_id": call.id, "name": call.name,
                                  "arguments": json.dumps(call.arguments)})
        elif isinstance(message, ToolMessage):
            for result in message.content:
                items.extend(_result_items(result))
    return ("\n\n".join(system) or None), items


def responses_params(request: LLMRequest, *, model: str, provider: str) -> dict[str, Any]:
    """The keyword arguments for ``responses.create``."""
    tools: list[dict[str, Any]] = []
    for tool in request.tools:
        if not isinstance(tool, ComputerTool):
            raise unsupported_tool_error(provider=provider, model=model, tool=tool, known=["computer_use_preview"])
        tools.append({"type": "computer_use_preview", "display_width": tool.display_width,
                      "display_height": tool.display_height, "environment": tool.environment})
    instructions, items = to_response_input(request)
    params: dict[str, Any] = {"model": model, "input": items}
    if instructions:
        params["instructions"] = instructions
    if tools:
        params["tools"] = tools
        params["truncation"] = "auto"  # required with the computer tool
    if request.previous_response_id is not None:
        params["previous_response_id"] = request.previous_response_id
    if request.max_output_tokens is not None:
        params["max_output_tokens"] = request.max_output_tokens
    if request.temperature is not None:
        params["temperature"] = request.temperature
    return params


def _dump(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(exclude_none=True, warnings=False) if callable(dump) else value


def parse_response(raw: Any, *, model: str, provider: str) -> ModelResponse:
    output = getattr(raw, "output", None)
    if not isinstance(output, list):
        raise malformed_response_error(provider=provider, model=model, status=200,
                                       body=raw if isinstance(raw, str) else _dump(raw), detail="no output list in a response")
    error = getattr(raw, "error", None)
    if error is not None:
        raise malformed_response_error(provider=provider, model=model, status=200, body=_dump(raw),
                                       detail=f"the response failed: {getattr(error, 'message', error)}")
    texts: list[str] = []
    refusals: list[str] = []
    calls: list[ToolCallPart] = []
    for item in output:
        kind = getattr(item, "type", None)
        if kind == "message":
            for part in getattr(item, "content", None) or []:
                if getattr(part, "type", None) == "output_text":
                    texts.append(part.text)
                elif getattr(part, "type", None) == "refusal":
                    refusals.append(part.refusal)
        elif kind == "computer_call":
            action = getattr(item, "action", None)
            checks = tuple(PendingSafetyCheck(id=c.id, code=getattr(c, "code", None), message=getattr(c, "message", None))
                           for c in getattr(item, "pending_safety_checks", None) or [])
            calls.append(ToolCallPart(id=item.call_id, name=COMPUTER, arguments=_dump(action) if action is not None else {},
                                      safety_checks=checks))
        elif kind == "function_call":
            try:
                arguments = json.loads(item.arguments or "{}")
            except json.JSONDecodeError:
                arguments = {"_raw": item.arguments}
            calls.append(ToolCallPart(id=item.call_id, name=item.name, arguments=arguments))
    incomplete = getattr(raw, "incomplete_details", None)
    finish = getattr(incomplete, "reason", None) or getattr(raw, "status", None)
    return ModelResponse(
        text="\n".join(texts) if texts else None,
        refusal="\n".join(refusals) if refusals else None,
        tool_calls=tuple(calls),
        usage=openai_usage(getattr(raw, "usage", None), prompt="input", completion="output"),
        model=getattr(raw, "model", None) or model,
        finish_reason=finish,
        response_id=getattr(raw, "id", None),
    )
