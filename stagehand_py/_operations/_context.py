"""The operation context: what observe, act and extract need for one call, without the
Stagehand itself (so no operation imports or calls back into its caller)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import Page

from .._cache import ElementIdentity
from .._errors import ConfigurationError
from .._secrets import VariableSet
from .._session import PageSession
from ..llm import LLMClient

__all__ = ["OperationContext"]


@dataclass
class OperationContext:
    """One call's tab (its :class:`~stagehand_py._session.PageSession`, kept for the whole call
    even when the act opens a popup), its model client and its settings."""

    session: PageSession
    #: The model client, resolved by the Stagehand before the call; None when none is configured.
    client: LLMClient | None
    #: What to do to get a model, said by :meth:`model` when ``client`` is None.
    missing_model: str
    token_budget: int
    dom_settle_timeout: float
    self_heal: bool
    cache: Any = None
    #: This call's variables, built once when the call came in; they hide every value this
    #: Stagehand was given, also in later calls that pass no variables.
    variables: VariableSet = field(default_factory=lambda: VariableSet.of(None))
    #: ``time.monotonic()`` by which the verb must finish (its ``timeout=``), or None.
    deadline: float | None = None
    #: The session's page and identities (selector -> role and name of the element in the
    #: snapshot each action was chosen from; written to the action cache with the actions), as
    #: plain fields: the session does not change during the call.
    page: Page = field(init=False)
    identities: dict[str, ElementIdentity] = field(init=False)

    def __post_init__(self) -> None:
        self.page = self.session.page
        self.identities = self.session.identities

    def model(self) -> LLMClient:
        """The call's model client, or a :class:`ConfigurationError` saying how to configure one."""
        if self.client is None:
            raise ConfigurationError(self.missing_model)
        return self.client

    def action_timeout(self, wanted: float) -> float:
        """``wanted`` seconds, shortened so the executor gives up (with a precise error) before the verb times out."""
        if self.deadline is None:
            return wanted
        return max(0.1, min(wanted, self.deadline - time.monotonic() - 0.3))

