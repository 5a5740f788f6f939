"""The operation context: what observe, act and extract need from their Stagehand, without
the Stagehand itself (so no operation imports its caller)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from .._cache import ElementIdentity
from .._secrets import VariableSet
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
    #: This call's variables, built once when the call came in; they hide every value this
    #: Stagehand was given, also in later calls that pass no variables.
    variables: VariableSet = field(default_factory=lambda: VariableSet.of(None))
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

