"""The operation context: what observe, act and extract need from their Stagehand, without
the Stagehand itself (so no operation imports its caller)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from .._actions import secret_values
from .._cache import ElementIdentity
from .._types import VariableValue
from ..llm import LLMClient
from ..snapshot import Snapshot

__all__ = ["OperationContext"]


@dataclass
class OperationContext:
    """Everything an operation needs from its Stagehand, without the Stagehand itself."""

    page: Any
    snapshot: Callable[..., Awaitable[Snapshot]]
    get_client: Callable[[], LLMClient]
    has_model: Callable[[], bool]
    token_budget: int
    dom_settle_timeout: float
    self_heal: bool
    cache: Any = None
    #: Every variable seen by this Stagehand (name -> spec); their values are redacted from
    #: all page text sent to the model, also in later calls that pass no variables.
    known_variables: dict[str, VariableValue] = field(default_factory=dict)
    #: This call's variables as the model may see them (``%name%`` -> description), computed
    #: once per call; the names were checked when they were.
    variable_descriptions: dict[str, str] = field(default_factory=dict)
    #: ``time.monotonic()`` by which the verb must finish (its ``timeout=``), or None.
    deadline: float | None = None
    #: selector -> identity (role, name) of the element in the snapshot each action of this
    #: call was chosen from; written to the action cache with the actions.
    identities: dict[str, ElementIdentity] = field(default_factory=dict)

    def action_timeout(self, wanted: float) -> float:
        """``wanted`` seconds, shortened so the executor gives up (with a precise error) before the verb times out."""
        if self.deadline is None:
            return wanted
        return max(0.1, min(wanted, self.deadline - time.monotonic() - 0.3))

    def secrets(self) -> list[str]:
        return secret_values(self.known_variables)
