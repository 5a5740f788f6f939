"""``%name%`` placeholders in action arguments, filled from the call's
:class:`~stagehand_py._secrets.VariableSet` at execution time, and the check of where a bound
:class:`~stagehand_py.Secret` may go.

The model only ever sees placeholder names (and optional descriptions); the values go
straight from the caller to the browser. Hence the rules here:

- exactly ``%name%`` with ``name`` matching ``[A-Za-z_][A-Za-z0-9_]*`` is a placeholder; the
  substitution is one regex pass, so ``%user%`` never touches ``%username%`` and a value that
  itself contains ``%x%`` is not substituted again;
- one output argument per input argument (no cartesian products);
- a placeholder without a variable raises :class:`UnknownVariableError` naming the missing
  and available *names*, before anything reaches the browser (typing a literal
  ``%password%`` into a field is never what the caller wanted);
- no value ever appears in an exception message, a log record or a repr.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from playwright.async_api import ElementHandle

from .._errors import InvalidArgumentError, SecretPlacementError, UnknownVariableError
from .._secrets import VariableSet
from .._util import url_parts

__all__ = [
    "PLACEHOLDER",
    "check_placement",
    "placeholders_in",
    "substitute",
]

#: A placeholder: ``%name%``; group 1 is the name.
PLACEHOLDER = re.compile(r"%([A-Za-z_][A-Za-z0-9_]*)%")


def placeholders_in(arguments: Sequence[object]) -> list[str]:
    """The placeholder names used in ``arguments``, in order of first use, without repeats."""
    seen: dict[str, None] = {}
    for argument in arguments:
        if isinstance(argument, str):
            for match in PLACEHOLDER.finditer(argument):
                seen.setdefault(match.group(1))
    return list(seen)


def substitute(arguments: Sequence[object], variables: VariableSet) -> list[str]:
    """Return ``arguments`` with every ``%name%`` replaced by its variable's value.

    Numbers in ``arguments`` become strings. Raises :class:`UnknownVariableError` when a
    placeholder has no variable (even when ``variables`` is empty) and
    :class:`InvalidArgumentError` for an argument that is not a string or number.
    """
    texts: list[str] = []
    for position, argument in enumerate(arguments, start=1):
        if isinstance(argument, bool) or not isinstance(argument, (str, int, float)):
            raise InvalidArgumentError(
                f"argument {position} must be a string (or a number); got a {type(argument).__name__}."
            )
        texts.append(str(argument))
    used = placeholders_in(texts)
    missing = [name for name in used if name not in variables]
    if missing:
        available = variables.names
        listed = ", ".join(f"%{name}%" for name in missing)
        raise UnknownVariableError(
            f"the action uses {listed} but no variable of that name was given "
            f"(available: {', '.join(available) if available else 'none'}). "
            "Pass variables={'name': value} with every placeholder the action uses.",
            missing=missing,
            available=available,
        )
    values = {name: variables.value(name) for name in used}
    return [PLACEHOLDER.sub(lambda m: values[m.group(1)], text) for text in texts]


async def check_placement(used: Sequence[str], variables: VariableSet, element: ElementHandle, frame_url: str, *,
                          selector: str, method: str) -> None:
    """Raise :class:`SecretPlacementError`, before anything is typed, when a placeholder in ``used``
    names a :class:`~stagehand_py.Secret` bound to origins that ``frame_url`` (the frame of
    ``element``, the element about to receive it) is not one of, or bound to a field ``element``
    does not match. The model's choice does not matter: the check is on where the element really
    is, asked from Playwright's utility world (page scripts cannot answer for it)."""
    for name in used:
        rule = variables.placement(name)
        if rule is None:
            continue
        here = _origin(frame_url)
        if rule.origins and (here is None or here not in {_origin(o) for o in rule.origins}):
            raise SecretPlacementError(
                f"%{name}% may only be typed into a page of {', '.join(rule.origins)}; the field is on "
                f"{here or 'a page with no origin'}, so nothing was typed. Navigate to the right page first.",
                variable=name, selector=selector, method=method)
        if rule.field and not await _matches(element, rule.field):
            raise SecretPlacementError(
                f"%{name}% may only be typed into the field {rule.field!r}; {method} chose {selector}, which is "
                "another element, so nothing was typed. Act on that field (observe again to find it).",
                variable=name, selector=selector, method=method)


async def _matches(element: ElementHandle, field: str) -> bool:
    """True when ``element`` matches the selector ``field`` in its own document: a CSS selector
    (``css=`` optional) or ``xpath=...``. Both are evaluated by Playwright's selector engines in
    its utility world, so a page that overrides ``matches``, ``querySelector`` or
    ``document.evaluate`` cannot make another element pass."""
    if field.startswith("xpath=") or field.startswith("/"):
        path = field.removeprefix("xpath=")
        # `count(. | S) = count(S)`: the element is one of the nodes S selects (XPath 1.0 has no `is`).
        query = f"xpath=self::node()[count(. | {path}) = count({path})]"
    else:
        query = f"css=:scope:is({field.removeprefix('css=')})"
    try:
        found = await element.query_selector(query)
    except Exception as exc:  # Playwright rejects the selector: the rule itself is wrong
        raise InvalidArgumentError(
            f"Secret(field={field!r}) is not a selector Playwright can evaluate ({str(exc).splitlines()[0]}); "
            "write a CSS selector (e.g. '#password') or 'xpath=//input[@name=\'pw\']'.") from exc
    if found is None:
        return False
    await found.dispose()
    return True


def _origin(url: str) -> str | None:
    parts = url_parts(url)
    if parts is None or parts.scheme not in ("http", "https"):
        return None
    port = parts.port or {"http": "80", "https": "443"}[parts.scheme]
    return f"{parts.scheme}://{parts.host}:{port}"
