"""``%name%`` placeholders in action arguments, filled from the caller's variables at execution time.

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
from collections.abc import Mapping, Sequence

from .._errors import ActionFailedError, InvalidArgumentError, UnknownVariableError
from .._secrets import Secret, secret_forms
from .._secrets import variable_value as _value_of
from .._types import VariableValue
from .._util import url_parts

__all__ = [
    "PLACEHOLDER",
    "check_secret_origins",
    "check_variables",
    "placeholder_descriptions",
    "placeholders_in",
    "secret_values",
    "substitute",
]

#: A placeholder: ``%name%``; group 1 is the name.
PLACEHOLDER = re.compile(r"%([A-Za-z_][A-Za-z0-9_]*)%")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _check_names(variables: Mapping[str, object]) -> None:
    if not isinstance(variables, Mapping):
        # A list or a string here used to fail deep inside with AttributeError.
        raise InvalidArgumentError(
            f"variables must be a mapping of name -> value (or -> {{'value': ..., 'description': ...}}), "
            f"not a {type(variables).__name__}: e.g. variables={{'username': 'ada'}}."
        )
    for name in variables:
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise InvalidArgumentError(
                f"variable name {name!r} cannot be used as a placeholder; names must match "
                "[A-Za-z_][A-Za-z0-9_]* so that %name% can refer to them."
            )


def check_variables(variables: object, *, what: str = "variables") -> None:
    """Raise :class:`InvalidArgumentError` (naming ``what`` and the variable, never a value) unless
    ``variables`` is None or a mapping of placeholder names to usable values: the check every
    entry point makes before anything runs, so a list or a string fails here, typed, and not deep
    inside as a ``ValueError``."""
    if variables is None:
        return
    try:
        _check_names(variables)  # type: ignore[arg-type]  # checked at run time: callers pass anything
        for name, spec in variables.items():  # type: ignore[attr-defined]
            _value_of(name, spec)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"{what}: {exc}") from None


def placeholders_in(arguments: Sequence[object]) -> list[str]:
    """The placeholder names used in ``arguments``, in order of first use, without repeats."""
    seen: dict[str, None] = {}
    for argument in arguments:
        if isinstance(argument, str):
            for match in PLACEHOLDER.finditer(argument):
                seen.setdefault(match.group(1))
    return list(seen)


def substitute(arguments: Sequence[object], variables: Mapping[str, VariableValue] | None) -> list[str]:
    """Return ``arguments`` with every ``%name%`` replaced by its variable's value.

    Numbers in ``arguments`` become strings. Raises :class:`UnknownVariableError` when a
    placeholder has no variable (even when ``variables`` is empty or None) and
    :class:`InvalidArgumentError` for an argument that is not a string or number, or a
    variable that is malformed.
    """
    variables = variables or {}
    _check_names(variables)
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
        available = sorted(variables)
        listed = ", ".join(f"%{name}%" for name in missing)
        raise UnknownVariableError(
            f"the action uses {listed} but no variable of that name was given "
            f"(available: {', '.join(available) if available else 'none'}). "
            "Pass variables={'name': value} with every placeholder the action uses.",
            missing=missing,
            available=available,
        )
    values = {name: _value_of(name, variables[name]) for name in used}
    return [PLACEHOLDER.sub(lambda m: values[m.group(1)], text) for text in texts]


def placeholder_descriptions(variables: Mapping[str, VariableValue] | None) -> dict[str, str]:
    """``{name: description}`` for prompts: what the model may know about each variable.

    The description is ``""`` for plain values. Values are never included.
    """
    variables = variables or {}
    _check_names(variables)
    described: dict[str, str] = {}
    for name, spec in variables.items():
        description = spec.get("description", "") if isinstance(spec, Mapping) else getattr(spec, "description", "")
        described[name] = str(description or "")
    return described


def secret_values(variables: Mapping[str, VariableValue] | None) -> list[str]:
    """Every variable's value as a string, for redaction: non-empty, unique, longest first.

    Longest first so that redacting ``"abc"`` does not leave the tail of ``"abcdef"``.
    """
    variables = variables or {}
    values = {form for spec in variables.values() for form in secret_forms(spec)}
    return sorted((v for v in values if v), key=lambda v: (-len(v), v))


def check_secret_origins(used: Sequence[str], variables: Mapping[str, VariableValue] | None, frame_url: str) -> None:
    """Raise :class:`ActionFailedError`, before anything is typed, when a placeholder in ``used``
    names a :class:`Secret` bound to origins and ``frame_url`` (the frame of the element about to
    receive it) is not one of them. The model's choice of element does not matter: the check is
    on where the element really is."""
    for name in used:
        spec = (variables or {}).get(name)
        if not isinstance(spec, Secret) or not spec.origins:
            continue
        here = _origin(frame_url)
        if here is None or here not in {_origin(o) for o in spec.origins}:
            raise ActionFailedError(
                f"%{name}% may only be typed into a page of {', '.join(spec.origins)}; the field is on "
                f"{here or 'a page with no origin'}, so nothing was typed. Navigate to the right page first."
            )


def _origin(url: str) -> str | None:
    parts = url_parts(url)
    if parts is None or parts.scheme not in ("http", "https"):
        return None
    port = parts.port or {"http": "80", "https": "443"}[parts.scheme]
    return f"{parts.scheme}://{parts.host}:{port}"
