"""Redaction of secret values in everything this layer writes down.

Secrets reach the model (it may need a value to type it), but never a log file, an error
message or a log record: those outlive the run and get pasted into bug reports. The matching
rules (transformed echoes, short values as whole tokens only) and the placeholder are those of
:mod:`stagehand_py._secrets`, the one redaction of the library.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from .._secrets import SECRET_PLACEHOLDER, redact_secrets

__all__ = ["REDACTED", "Redactor"]

#: What a secret becomes in logs, errors and cassettes: ``%secret%``, the library's one
#: placeholder style (a variable's own value shows as ``%name%``).
REDACTED = SECRET_PLACEHOLDER


class Redactor:
    """Replaces every secret value, and the echoes :mod:`stagehand_py._secrets` matches (case,
    URL/HTML encoding, base64, Unicode forms, zero-width characters), by :data:`REDACTED`.

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
        return redact_secrets(value, self._secrets) if self._secrets else value

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
            for attr in ("message", "body", "details", "last_output"):  # details: google-genai's APIError
                if hasattr(current, attr):
                    try:
                        setattr(current, attr, self.data(getattr(current, attr)))
                    except AttributeError:  # read-only property
                        pass
            current = current.__cause__ or current.__context__
