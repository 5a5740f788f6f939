"""Helpers for operations tests: read what the model was shown, answer like a model would."""

from __future__ import annotations

import json
import re
from typing import Any

from stagehand_py.llm import LLMRequest
from stagehand_py.llm._messages import message_text
from stagehand_py.snapshot import estimate_tokens


def prompt_text(request: LLMRequest) -> str:
    """Every message of the request, joined."""
    return "\n".join(message_text(m) for m in request.messages)


def last_user(request: LLMRequest) -> str:
    return next(message_text(m) for m in reversed(request.messages) if m.role == "user")


def first_user(request: LLMRequest) -> str:
    return next(message_text(m) for m in request.messages if m.role == "user")


def find_id(request: LLMRequest | str, line: str) -> str:
    """The id of the outline line whose text (after the id) matches regex ``line``."""
    text = request if isinstance(request, str) else first_user(request)
    m = re.search(rf"\[(\d+-\d+)\] {line}", text)
    assert m, f"no outline line matches {line!r} in:\n{text[:3000]}"
    return m.group(1)


def element(eid: str, method: str = "click", arguments: list[str] | None = None, description: str = "") -> dict[str, Any]:
    return {"element_id": eid, "description": description or f"element {eid}", "method": method, "arguments": arguments or []}


def request_tokens(request: LLMRequest) -> int:
    """Estimated prompt tokens as the budget counts them: messages plus the schema."""
    return estimate_tokens(prompt_text(request) + json.dumps(request.output_schema or {}, indent=2, sort_keys=True))
