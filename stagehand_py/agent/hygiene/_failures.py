"""Failures: consecutive failures (show the model the actionable elements after 3) and a circuit
breaker on consecutive *infrastructure* failures (:func:`classify_error`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ..._errors import (
    BrowserError,
    CDPError,
    PageClosedError,
    ProviderConnectionError,
    RateLimitError,
    ServerError,
    StagehandTimeoutError,
)

__all__ = ["ErrorKind", "FailureState", "FailureTracker", "classify_error"]

ErrorKind = Literal["infrastructure", "logic"]

_INFRA_PATTERNS = re.compile(
    r"net::ERR_(NAME_NOT_RESOLVED|CONNECTION_(REFUSED|RESET|CLOSED|TIMED_OUT|ABORTED|FAILED)|"
    r"INTERNET_DISCONNECTED|ADDRESS_UNREACHABLE|NETWORK_CHANGED|TIMED_OUT|EMPTY_RESPONSE|"
    r"PROXY_CONNECTION_FAILED|SSL_PROTOCOL_ERROR|TUNNEL_CONNECTION_FAILED)"
    r"|Target crashed|Page crashed|Target page, context or browser has been closed|Browser has been closed"
    r"|Connection closed|WebSocket is not open|ECONNREFUSED|getaddrinfo",
    re.IGNORECASE,
)


def classify_error(exc: BaseException) -> ErrorKind:
    """``"infrastructure"`` for the browser, the network or the model service failing (DNS,
    connection refused, a crashed or closed page, a provider that cannot be reached);
    ``"logic"`` for everything the model can fix by choosing differently (element not found,
    invalid arguments, a blocked domain, a bad answer)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (PageClosedError, CDPError, ProviderConnectionError, ServerError, RateLimitError)):
            return "infrastructure"
        if isinstance(current, BrowserError) and not isinstance(current, StagehandTimeoutError):
            return "infrastructure"
        if _INFRA_PATTERNS.search(str(current)):
            return "infrastructure"
        current = current.__cause__ or current.__context__
    return "logic"


@dataclass(frozen=True)
class FailureState:
    consecutive: int
    consecutive_infrastructure: int
    #: True from the 3rd consecutive failure: show the model the actionable elements.
    show_elements: bool
    #: True when the circuit breaker tripped: stop the run.
    tripped: bool


class FailureTracker:
    """Consecutive failures, and a circuit breaker on consecutive infrastructure failures."""

    def __init__(self, *, show_elements_after: int = 3, breaker_threshold: int = 3) -> None:
        self.show_elements_after = show_elements_after
        self.breaker_threshold = breaker_threshold
        self.consecutive = 0
        self.consecutive_infrastructure = 0
        self.tripped = False

    def success(self) -> FailureState:
        self.consecutive = 0
        self.consecutive_infrastructure = 0
        return self._state()

    def failure(self, kind: ErrorKind) -> FailureState:
        self.consecutive += 1
        if kind == "infrastructure":
            self.consecutive_infrastructure += 1
            if self.consecutive_infrastructure >= self.breaker_threshold:
                self.tripped = True
        else:
            self.consecutive_infrastructure = 0
        return self._state()

    def _state(self) -> FailureState:
        return FailureState(
            self.consecutive,
            self.consecutive_infrastructure,
            self.consecutive >= self.show_elements_after,
            self.tripped,
        )
