"""The checks every entry point makes on what a caller hands it, in one place.

``agent()``/``execute()``, the MCP server, the batch runner and the pytest fixtures take
variables, schemas and timeouts from outside; each calls :func:`check_inputs` before it runs
anything, so the same bad input gets the same typed error (what was wrong, with which input,
what to do) wherever it comes in. The verbs, which take variables only (extract checks its
schema when it resolves it), build their set with the same check,
:meth:`~stagehand_py._secrets.VariableSet.of`, which :func:`check_inputs` calls too. A schema's remote ``$ref`` is refused here, never
fetched, and a local one that names nothing is an :class:`InvalidSchemaError`, not a
``KeyError`` later.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel

from ._errors import InvalidArgumentError, InvalidSchemaError
from ._secrets import VariableSet
from .llm._structured import check_json_schema

__all__ = ["check_flag", "check_inputs", "check_instruction", "deadline_of", "required_instruction"]


def check_inputs(what: str, *, variables: object = None, schema: object = None, schema_param: str = "schema",
                 timeout: object = None) -> VariableSet:
    """Raise a typed :class:`InvalidArgumentError` naming ``what`` (e.g. ``"agent.execute"``) and
    the parameter (``schema_param`` for the schema's) unless ``variables`` is None or a mapping of names to values, ``schema`` is None, a pydantic
    model class or a JSON Schema dict whose every ``$ref`` is local and names something, and
    ``timeout`` is None or a positive number of seconds. Returns the call's
    :class:`~stagehand_py._secrets.VariableSet`, built here once (empty for no variables)."""
    checked = VariableSet.of(variables, what=f"{what}(variables=...)")
    if schema is not None:
        _check_schema(schema, what=f"{what}({schema_param}=...)")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise InvalidArgumentError(f"{what}(timeout=...) must be a positive number of seconds or None, got {timeout!r}.")
    return checked


def _check_schema(schema: Any, *, what: str) -> None:
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return  # pydantic writes the schema: every $ref it makes is local
    if not isinstance(schema, dict):
        raise InvalidSchemaError(f"{what} must be a pydantic model class or a JSON Schema dict, not {type(schema).__name__}.")
    check_json_schema(schema, what=what)


def check_instruction(what: str, instruction: object, *, required: bool) -> str | None:
    """A verb's instruction, stripped; None when it may be left out and was. Else a typed error."""
    if instruction is None and not required:
        return None
    if not isinstance(instruction, str) or not instruction.strip():
        raise InvalidArgumentError(
            f"{what}() needs a non-empty instruction string, got {instruction!r}."
            + ("" if required else f" Leave it out (None) to {what} without one.")
        )
    return instruction.strip()


def check_flag(what: str, name: str, value: object) -> bool:
    """A verb's yes/no option (``extract(report=...)``): True or False, else a typed error."""
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{what}({name}=...) takes True or False, not {value!r}.")
    return value


def required_instruction(what: str, instruction: object) -> str:
    checked = check_instruction(what, instruction, required=True)
    assert checked is not None  # required=True never returns None
    return checked


def deadline_of(what: str, timeout: object) -> float | None:
    """A verb's one deadline (``time.monotonic()``, asyncio's clock) from its ``timeout=``, checked;
    every bound of the call derives from it."""
    if timeout is not None and (not isinstance(timeout, (int, float)) or timeout <= 0):
        raise InvalidArgumentError(f"{what}(timeout=...) must be a positive number of seconds, got {timeout!r}.")
    return None if timeout is None else time.monotonic() + timeout
