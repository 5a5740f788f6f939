"""Per-context switches the test helpers turn on: kill switch, request capture, cassettes.

They live here (not in ``stagehand_py.testing``) because the client consults them on every
request; the public context managers are in :mod:`stagehand_py.testing`. Context variables,
not module globals, so concurrent tests and tasks do not see each other's switches.
"""

from __future__ import annotations

import os
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ._request import LLMRequest, ModelResponse

__all__ = [
    "BLOCK_ENV_VAR",
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
