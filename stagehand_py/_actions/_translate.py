"""Turns Playwright's exceptions into the library's exception tree.

Playwright raises one ``Error`` class for everything; the message is all there is to tell
a closed page from a refused click. The checks below are the message fragments Playwright
1.4x-1.6x uses; an unknown message falls back to :class:`ActionFailedError`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from .._errors import ActionError, ActionFailedError, PageClosedError, StagehandTimeoutError
from .._secrets import SECRET_PLACEHOLDER, redact_secrets

__all__ = ["is_closed_error", "is_transient_error", "redact", "translate_error"]

_CLOSED_MARKERS = (
    "has been closed",
    "target closed",
    "browser closed",
    "browser has disconnected",
    "connection closed",
)
# The document changed under us (navigation, re-render of a frame): worth trying again.
_TRANSIENT_MARKERS = (
    "execution context was destroyed",
    "cannot find context with specified id",
    "frame was detached",
    "frame got detached",
    "element is not attached",
    "node is detached",
    "navigating frame was detached",
)


def is_closed_error(exc: BaseException) -> bool:
    """True when ``exc`` says the page, its context or the browser is gone."""
    text = str(exc).lower()
    return any(marker in text for marker in _CLOSED_MARKERS)


def is_transient_error(exc: BaseException) -> bool:
    """True when ``exc`` says the document or frame changed while we were looking at it."""
    text = str(exc).lower()
    return any(marker in text for marker in _TRANSIENT_MARKERS)


def redact(text: str, secrets: Iterable[str]) -> str:
    """Replace every secret value in ``text`` (and its echoes) with ``%secret%``, the library's
    one redaction (:mod:`stagehand_py._secrets`), and every quoted fragment of one: Playwright
    quotes the piece of a value it could not parse (``Unknown key: "@w9"`` for a key chord
    holding a password)."""
    values = sorted({s for s in secrets if s}, key=len, reverse=True)
    text = redact_secrets(text, values)

    def fragment(m: re.Match[str]) -> str:
        inner = m.group(2)
        if len(inner) >= 2 and any(inner in secret for secret in values):
            return f"{m.group(1)}{SECRET_PLACEHOLDER}{m.group(1)}"
        return m.group(0)

    return _QUOTED.sub(fragment, text) if values else text


_QUOTED = re.compile(r"""(["'`])([^"'`\n]{1,200})\1""")


def _first_line(exc: BaseException) -> str:
    """Playwright messages carry a long 'Call log'; the first line is the useful part."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def translate_error(
    exc: PlaywrightError,
    *,
    what: str,
    selector: str,
    method: str,
    timeout: float,
    secrets: Iterable[str] = (),
) -> StagehandTimeoutError | ActionError | PageClosedError:
    """Build the library error for a Playwright failure of ``what`` (e.g. "click on xpath=...").

    The caller raises it ``from`` a cause; when ``secrets`` occur in Playwright's text the
    caller must not chain the original (see :func:`safe_cause`).
    """
    detail = redact(_first_line(exc), secrets)
    if isinstance(exc, PlaywrightTimeoutError):
        return StagehandTimeoutError(
            f"{what} did not finish within {timeout:g} s ({detail}). The element may be hidden, "
            "disabled or covered; raise timeout= or check the page."
        )
    if is_closed_error(exc):
        return PageClosedError(f"{what} failed because the page or browser was closed ({detail}).")
    return ActionFailedError(f"{what} failed: {detail}", selector=selector, method=method)


def safe_cause(exc: BaseException, secrets: Iterable[str]) -> BaseException:
    """The exception to chain as ``__cause__``: ``exc`` itself unless its text holds a secret.

    Playwright sometimes echoes the value it was typing; chaining that exception would print
    the secret in every traceback, so we chain a redacted stand-in of the same class instead.
    """
    secrets = [s for s in secrets if s]
    text = str(exc)
    if not any(s in text for s in secrets):
        return exc
    stand_in = PlaywrightError(redact(text, secrets))
    if isinstance(exc, PlaywrightTimeoutError):
        stand_in = PlaywrightTimeoutError(redact(text, secrets))
    return stand_in
