"""Redaction of secret values in everything this layer writes down.

Secrets reach the model (it may need a value to type it), but never a log file, an error
message or a log record: those outlive the run and get pasted into bug reports.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

__all__ = ["REDACTED", "Redactor"]

REDACTED = "[REDACTED]"


class Redactor:
    """Replaces every occurrence of any secret value by ``[REDACTED]``.

    Longer secrets are replaced first so that a secret containing another is not left half
    visible. Empty strings are ignored (they would match everywhere).
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = {str(s) for s in secrets if str(s)}
        self._secrets: tuple[str, ...] = tuple(sorted(values, key=len, reverse=True))

    @property
    def active(self) -> bool:
        return bool(self._secrets)

    def with_extra(self, secrets: Iterable[str]) -> Redactor:
        return Redactor((*self._secrets, *secrets))

    def text(self, value: str) -> str:
        for secret in self._secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value

    def data(self, value: Any) -> Any:
        """Redact a JSON-like structure (and pydantic models, dumped first)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, BaseModel):
            return self.data(value.model_dump(mode="json"))
        if isinstance(value, dict):
            return {self.text(str(k)): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value

    def exception(self, exc: BaseException) -> None:
        """Redact an exception and its whole cause chain in place.

        Provider SDK errors often echo the offending input; mutating ``args`` (and the
        ``message``/``body``/``last_output`` attributes our and the SDKs' errors carry) keeps
        secrets out of ``str(exc)`` and out of printed tracebacks.
        """
        if not self._secrets:
            return
        seen: set[int] = set()
        current: BaseException | None = exc
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            current.args = tuple(self.data(a) if isinstance(a, str | dict | list | tuple) else a for a in current.args)
            for attr in ("message", "body", "last_output"):
                if hasattr(current, attr):
                    try:
                        setattr(current, attr, self.data(getattr(current, attr)))
                    except AttributeError:  # read-only property
                        pass
            current = current.__cause__ or current.__context__
