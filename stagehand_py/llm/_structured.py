"""Structured output: what shape we ask for, and whether the answer has it.

An output is a pydantic model class or a plain JSON Schema. Either way the wire carries a JSON
Schema whose top level is an object (tool calls and native JSON-schema formats require one),
and the answer is validated here, in one place, whatever mode produced it. Errors are phrased
for the model: they are sent back verbatim in the re-ask message.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import jsonschema
import referencing
import referencing.exceptions
from jsonschema.exceptions import SchemaError
from pydantic import BaseModel, TypeAdapter, ValidationError

from .._errors import InvalidSchemaError, RefusalError
from .._prompts.llm import not_a_choice
from .._util import pop_defs, ref_target, schema_dict
from ._request import ModelResponse

__all__ = ["InvalidOutput", "OutputSpec", "check_json_schema", "parse_json_text", "validation_errors"]

T = TypeVar("T")

_WRAP_KEY = "value"
#: Enums longer than this are not listed in validation errors (choice mode has hundreds).
_ENUM_SHOWN = 8
_FENCE = re.compile(r"^\s*```(?:json|JSON)?\s*\n?(.*?)\n?```\s*$", re.DOTALL)


class InvalidOutput(Exception):
    """The answer did not validate; ``errors`` are model-readable lines, ``raw`` the answer."""

    def __init__(self, errors: list[str], raw: Any) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors
        self.raw = raw


def parse_json_text(text: str) -> Any:
    """Parse JSON a model wrote as text, tolerating code fences and prose around one object.

    Raises :class:`InvalidOutput` with a message the model can act on.
    """
    candidate = text.strip()
    fenced = _FENCE.match(candidate)
    if fenced:
        candidate = fenced.group(1).strip()
    try:
        return json.loads(candidate)
    except RecursionError as deep:
        raise InvalidOutput(["the answer is nested too deeply to read; answer with a flat JSON object"], text) from deep
    except json.JSONDecodeError as first:
        # Prose around one JSON value: take the outermost {...} or [...].
        for opener, closer in (("{", "}"), ("[", "]")):
            start, end = candidate.find(opener), candidate.rfind(closer)
            if 0 <= start < end:
                try:
                    return json.loads(candidate[start : end + 1])
                except (json.JSONDecodeError, RecursionError):
                    continue
        raise InvalidOutput([f"the answer is not valid JSON ({first.msg} at line {first.lineno} column {first.colno})"], text) from first


def _is_object_schema(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "object" or ("properties" in schema and "type" not in schema)


@dataclass(frozen=True)
class OutputSpec(Generic[T]):
    """The expected output of one ``generate`` call."""

    #: The schema as the user gave it (or pydantic generated it).
    schema: dict[str, Any] | None
    #: The object schema sent on the wire (``schema`` itself, or wrapped under "value").
    wire_schema: dict[str, Any] | None
    name: str
    model: type[BaseModel] | None
    wrapped: bool

    @staticmethod
    def from_output(output: type[BaseModel] | dict[str, Any] | None, *, name: str | None = None) -> OutputSpec[Any]:
        if output is None:
            return OutputSpec(schema=None, wire_schema=None, name=name or "result", model=None, wrapped=False)
        if isinstance(output, type) and issubclass(output, BaseModel):
            return OutputSpec._build(schema_dict(output), name or _snake(output.__name__), output)
        if isinstance(output, dict):
            check_json_schema(output, what="output")
            return OutputSpec._build(dict(output), name or str(output.get("title") or "result"), None)
        raise InvalidSchemaError(
            f"output must be a pydantic model class, a JSON Schema dict or None, not {type(output).__name__}."
        )

    @staticmethod
    def _build(schema: dict[str, Any], name: str, model: type[BaseModel] | None) -> OutputSpec[Any]:
        safe_name = re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64] or "result"
        if _is_object_schema(schema):
            return OutputSpec(schema=schema, wire_schema=schema, name=safe_name, model=model, wrapped=False)
        inner = dict(schema)
        wire: dict[str, Any] = {
            "type": "object",
            "properties": {_WRAP_KEY: inner},
            "required": [_WRAP_KEY],
            "additionalProperties": False,
            **pop_defs(inner),
        }
        return OutputSpec(schema=schema, wire_schema=wire, name=safe_name, model=model, wrapped=True)

    def extract(self, response: ModelResponse) -> Any:
        """The answer as plain data (or text for free-text calls), before validation.

        Raises :class:`RefusalError` for a refusal or an empty answer and
        :class:`InvalidOutput` for text that is not JSON.
        """
        if response.refusal:
            raise RefusalError(f"the model refused to answer: {response.refusal}")
        if self.wire_schema is None:
            if response.output is not None:
                return response.output if isinstance(response.output, str) else json.dumps(_plain(response.output))
            if not response.text:
                raise RefusalError("the model answered with no content (empty text). Rephrase the request or try another model.")
            return response.text
        if response.output is not None:
            data = _plain(response.output)
        elif response.text is not None and response.text.strip():
            data = parse_json_text(response.text)
        else:
            raise RefusalError(
                f"the model answered with no content where a {self.name!r} JSON object was required "
                f"(finish reason: {response.finish_reason or 'unknown'}). Rephrase the request or try another model."
            )
        if self.wrapped and isinstance(data, dict) and set(data) == {_WRAP_KEY}:
            data = data[_WRAP_KEY]
        return data

    def read(self, response: ModelResponse) -> Any:
        """The answer validated (:meth:`extract`, then :meth:`validate`)."""
        return self.validate(self.extract(response))

    def validate(self, data: Any) -> Any:
        """Validated output: a pydantic instance, or ``data`` itself once it fits the schema."""
        if self.schema is None:
            return data
        errors, value = validation_errors(data, self.schema, self.model)
        if errors:
            raise InvalidOutput(errors, data)
        return value


def _refuse_remote(uri: str) -> Any:
    """The registry's retrieval: the library never fetches a schema (no request the user did not ask for)."""
    raise InvalidSchemaError(f"the schema refers to {uri!r}, which is not in the schema; remote $ref is never fetched.")


#: Resolves only what is inside the schema itself (``#/$defs/...``); anything else is refused.
_NO_REMOTE = referencing.Registry(retrieve=_refuse_remote)  # type: ignore[call-arg]


def _refs(node: Any, path: str = "$") -> list[tuple[str, str]]:
    """Every ``$ref`` in ``node`` with where it is, iteratively (a deep schema must not recurse)."""
    found: list[tuple[str, str]] = []
    stack: list[tuple[Any, str]] = [(node, path)]
    while stack:
        current, where = stack.pop()
        if isinstance(current, dict):
            ref = current.get("$ref")
            if isinstance(ref, str):
                found.append((ref, where))
            stack.extend((v, f"{where}.{k}") for k, v in current.items())
        elif isinstance(current, list):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(current))
    return found


def check_json_schema(schema: dict[str, Any], *, what: str) -> None:
    """Raise :class:`InvalidSchemaError` (naming ``what``, e.g. ``"output"``) unless ``schema``
    is a valid JSON Schema whose every ``$ref`` points inside it. The one place schemas given by
    callers are checked; a remote ``$ref`` is refused here, never fetched."""
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        raise InvalidSchemaError(
            f"{what} is not a valid JSON Schema: {exc.message}. Pass a pydantic model class or a JSON Schema "
            "dict such as {'type': 'object', 'properties': {'title': {'type': 'string'}}}."
        ) from exc
    except RecursionError as exc:
        raise InvalidSchemaError(f"{what} is nested too deeply to check as a JSON Schema.") from exc
    for ref, where in _refs(schema):
        if not ref.startswith("#"):
            raise InvalidSchemaError(
                f"{what} has a remote $ref {ref!r} at {where}: stagehand_py never fetches schemas. Put the definition "
                "in the schema's own $defs and refer to it as '#/$defs/<name>'."
            )
        try:
            ref_target(schema, ref)
        except KeyError:
            raise InvalidSchemaError(
                f"{what} has a $ref {ref!r} at {where} that names nothing in the schema: define it under $defs "
                "or fix the reference."
            ) from None


def validation_errors(data: Any, schema: dict[str, Any], model: type[BaseModel] | None = None, *,
                      root: str = "$", limit: int = 20) -> tuple[list[str], Any]:
    """Check ``data`` against ``model`` (when given) or ``schema``: (problems, value).

    The one place answers are judged against a caller's schema. ``value`` is the pydantic
    instance (or ``data``); problems are model-readable lines such as ``$.items[0].price: ...``,
    at most ``limit``, with paths starting at ``root`` (a caller that wrapped the schema, as
    extract() does under ``data``, passes ``"$.data"`` so paths name what the model wrote).
    """
    if model is not None:
        try:
            return [], model.model_validate(data)
        except ValidationError as exc:
            return _pydantic_errors(exc, root)[:limit], None
    validator_cls = jsonschema.validators.validator_for(schema)
    try:
        errors = sorted(validator_cls(schema, registry=_NO_REMOTE).iter_errors(data), key=lambda e: list(e.absolute_path))
    except RecursionError:
        return [f"{root}: the answer is nested too deeply to check; answer with a flatter structure"], None
    except referencing.exceptions.Unresolvable as exc:
        raise InvalidSchemaError(f"the schema has a $ref that cannot be resolved inside it: {exc}") from exc
    errors = [sub for e in errors for sub in _alternative(e)]
    return [_json_path(list(e.absolute_path), root) + ": " + _message(e) for e in errors[:limit]], data


def _alternative(error: Any) -> list[Any]:
    """``error``, or for an answer that fits none of an ``anyOf``/``oneOf``, the problems of the
    alternative it came closest to: the fewest problems, then the one it got furthest along (its
    first problem at a later property of that alternative). "Not valid under any of the given
    schemas" alone tells a model nothing it can fix."""
    if error.validator not in ("anyOf", "oneOf") or not error.context:
        return [error]
    branches: dict[int, list[Any]] = {}
    for sub in error.context:
        branches.setdefault(sub.schema_path[0], []).append(sub)

    def reached(index: int) -> int:
        order = list(error.validator_value[index].get("properties", {}))
        first = [sub.relative_path[0] for sub in branches[index] if sub.relative_path]
        return min((order.index(p) for p in first if p in order), default=0)

    best = min(branches, key=lambda index: (len(branches[index]), -reached(index), index))
    return [sub for found in branches[best] for sub in _alternative(found)]


def _message(error: Any) -> str:
    """jsonschema's message, except for long enums: those would repeat every choice in the re-ask."""
    if error.validator == "enum" and isinstance(error.validator_value, list) and len(error.validator_value) > _ENUM_SHOWN:
        return not_a_choice(error.instance, len(error.validator_value))
    return str(error.message)


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return TypeAdapter(Any).dump_python(value, mode="json")


def _json_path(path: list[Any], root: str = "$") -> str:
    out = root
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def _pydantic_errors(exc: ValidationError, root: str = "$") -> list[str]:
    return [_json_path(list(e["loc"]), root) + ": " + e["msg"] for e in exc.errors(include_url=False)[:20]]


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
