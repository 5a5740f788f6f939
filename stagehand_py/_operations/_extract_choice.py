"""Choice-mode extract: the caller's schema answered with page lines, and the data read from them.

:func:`plan_of` walks the caller's schema once into a :data:`Plan` (objects, lists and leaves,
each leaf with how it is answered); :func:`choice_wire` makes the answer schema of one request
from it (every line-read leaf an enum of the request's :func:`~._extract_lines.line_choices`,
kept once under ``$defs``); :func:`read_answer` turns the answer into the caller's data and says
where each value came from. How each leaf is answered:

- ``text``, ``number``, ``integer``, ``link``: a page line (see :mod:`._extract_lines`); the value
  is read from the line. :data:`~stagehand_py._prompts.extract.NOT_ON_PAGE` is null in a nullable
  field, left out of an optional one, ``""`` in a required string (as the plain schema says a
  blank) and null otherwise (which the caller's schema then refuses: re-asked);
- ``generated``: a string field that asks for words not on the page (a summary, an explanation:
  :func:`~._extract_repairs.asks_for_words`): written by the model, and reported as generated;
- ``answered``: what no line holds as such and the schema bounds (a yes/no, one of the schema's
  own values, a date in a given format, a union): written by the model, as in the plain schema.

A schema choice mode cannot follow (a recursive one) has no plan: it is asked as a plain schema.

**Text fields of one record on one line** (``Basic: $5 per month`` holds a plan's name and its
price) take its parts, never the same words twice (:func:`_one_line_fields`): a field answered
with words that hold another field's answer from that line (the whole line) is the one piece of
them between separators that no other field took (``Basic``), recorded as a ``line_part``
repair; where that does not leave one piece (both answered the whole line; several pieces left),
the field is re-asked once with the line's pieces. Another field's words inside this field's
only piece are left alone.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from .._prompts.extract import SATISFIED_DESCRIPTION
from .._types import Repair
from .._util import inline_refs
from ._extract_lines import Choice, ChoiceKind, PageLine, pieces
from ._extract_repairs import asks_for_words, repair
from ._extract_schema import URL_FORMATS

__all__ = ["Plan", "Sourced", "choice_kinds", "choice_wire", "plan_of", "read_answer"]

LeafKind: TypeAlias = Literal["text", "number", "integer", "link", "generated", "answered"]
_LINE_KINDS: dict[str, ChoiceKind] = {"text": "text", "number": "number", "integer": "integer", "link": "link"}


@dataclass(frozen=True)
class _Leaf:
    kind: LeafKind
    #: The caller's schema of the leaf (inlined): the answer's shape for ``answered`` leaves.
    node: dict[str, Any]
    nullable: bool = False


@dataclass(frozen=True)
class _Object:
    props: dict[str, Plan]
    required: frozenset[str]
    nullable: bool = False
    description: str = ""


@dataclass(frozen=True)
class _Array:
    items: Plan
    nullable: bool = False
    description: str = ""


Plan: TypeAlias = "_Leaf | _Object | _Array"


def _branches(node: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    """The non-null branches of ``node``'s ``anyOf``/``oneOf``/type list, and whether null is one."""
    kinds = node.get("type")
    if isinstance(kinds, list):
        rest = [k for k in kinds if k != "null"]
        return [{**node, "type": k} for k in rest], len(rest) < len(kinds)
    options = node.get("anyOf") or node.get("oneOf")
    if not isinstance(options, list):
        return [node], False
    rest = [b for b in options if not (isinstance(b, dict) and b.get("type") == "null")]
    shared = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf")}
    return [{**shared, **b} for b in rest if isinstance(b, dict)], len(rest) < len(options)


def _plan(node: Any, key: str, depth: int) -> Plan:
    if not isinstance(node, dict) or depth > 32:
        return _Leaf("answered", node if isinstance(node, dict) else {})
    branches, nullable = _branches(node)
    if len(branches) != 1 or "enum" in node or "const" in node:
        return _Leaf("answered", node, nullable)
    one = branches[0]
    kind = one.get("type")
    described = str(one.get("description", ""))
    if kind == "object" or (kind is None and isinstance(one.get("properties"), dict)):
        props = one.get("properties")
        if not isinstance(props, dict) or not props:
            return _Leaf("answered", node, nullable)
        return _Object({name: _plan(sub, name, depth + 1) for name, sub in props.items()},
                       frozenset(one.get("required", [])), nullable, described)
    if kind == "array" and isinstance(one.get("items"), dict):
        return _Array(_plan(one["items"], key, depth + 1), nullable, described)
    if kind == "string":
        if one.get("format") in URL_FORMATS:
            return _Leaf("link", node, nullable)
        if "format" in one or "pattern" in one:
            return _Leaf("answered", node, nullable)
        return _Leaf("generated" if asks_for_words(key, one) else "text", node, nullable)
    if kind in ("number", "integer"):
        return _Leaf(kind, node, nullable)
    return _Leaf("answered", node, nullable)


def plan_of(schema: dict[str, Any]) -> Plan | None:
    """How each part of ``schema`` is answered in choice mode; None when it cannot be (a recursive
    schema keeps references that never end). A schema with nothing read from lines has none too."""
    inlined = inline_refs(copy.deepcopy(schema))
    if "$ref" in repr(inlined):
        return None
    plan = _plan(inlined, "", 0)
    return plan if choice_kinds(plan) else None


def choice_kinds(plan: Plan) -> set[ChoiceKind]:
    """The line kinds ``plan`` answers with (one enum each in the answer schema)."""
    if isinstance(plan, _Object):
        return set().union(*(choice_kinds(p) for p in plan.props.values()))
    if isinstance(plan, _Array):
        return choice_kinds(plan.items)
    kind = _LINE_KINDS.get(plan.kind)
    return {kind} if kind is not None else set()


def _wire(plan: Plan) -> dict[str, Any]:
    if isinstance(plan, _Object):
        out: dict[str, Any] = {"type": "object", "properties": {k: _wire(p) for k, p in plan.props.items()},
                               "required": list(plan.props), "additionalProperties": False}
    elif isinstance(plan, _Array):
        out = {"type": "array", "items": _wire(plan.items)}
    elif plan.kind in _LINE_KINDS:
        out = {"$ref": f"#/$defs/{plan.kind}_line"}
    else:
        return copy.deepcopy(plan.node)
    description = plan.description if not isinstance(plan, _Leaf) else str(plan.node.get("description", ""))
    if description:
        out["description"] = description
    return out


def choice_wire(plan: Plan, choices: Mapping[ChoiceKind, Mapping[str, Choice | None]]) -> dict[str, Any]:
    """The answer schema of one request: the data as :func:`_wire` makes it, each line kind's
    answers once under ``$defs``, and ``instruction_satisfied``."""
    return {
        "type": "object",
        "properties": {"data": _wire(plan),
                       "instruction_satisfied": {"type": "boolean", "description": SATISFIED_DESCRIPTION}},
        "required": ["data", "instruction_satisfied"],
        "additionalProperties": False,
        "$defs": {f"{kind}_line": {"type": "string", "enum": list(answers)} for kind, answers in choices.items()},
    }


class _Absent:
    """What a field answered "not on the page" reads as, before the schema decides null or left out."""


_ABSENT = _Absent()


@dataclass(frozen=True)
class Sourced:
    """Where one value came from: the page line it was read from, or the model's own words."""

    source: Literal["line", "generated", "answered"]
    line: PageLine | None = None


@dataclass
class _Reading:
    choices: Mapping[ChoiceKind, Mapping[str, Choice | None]]
    #: Paths already re-asked for sharing a line (across the answers of one request): kept the second time.
    asked: set[str]
    problems: list[str] = field(default_factory=list)
    repairs: list[Repair] = field(default_factory=list)


def _read(raw: Any, plan: Plan, reading: _Reading, path: str) -> tuple[Any, Any]:
    """(value, its sources as a tree of the same shape), or (ABSENT, None)."""
    if isinstance(plan, _Object):
        if raw is None and plan.nullable:
            return None, None
        if not isinstance(raw, dict):
            return raw, None
        data: dict[str, Any] = {}
        sources: dict[str, Any] = {}
        for key, sub in plan.props.items():
            value, source = _read(raw.get(key), sub, reading, f"{path}.{key}")
            if isinstance(value, _Absent):
                if sub.nullable:
                    data[key] = None
                elif key in plan.required:
                    data[key] = "" if isinstance(sub, _Leaf) and sub.kind == "text" else None
                continue
            data[key], sources[key] = value, source
        _one_line_fields(plan, raw, data, sources, reading, path)
        return data, sources
    if isinstance(plan, _Array):
        if not isinstance(raw, list):
            return (None, None) if raw is None and plan.nullable else (raw, None)
        pairs = [_read(item, plan.items, reading, f"{path}[{i}]") for i, item in enumerate(raw)]
        kept = [(v, s) for v, s in pairs if not isinstance(v, _Absent)]
        return [v for v, _ in kept], [s for _, s in kept]
    kind = _LINE_KINDS.get(plan.kind)
    if kind is None:
        return raw, Sourced("generated" if plan.kind == "generated" else "answered")
    answers = reading.choices.get(kind, {})
    if not isinstance(raw, str) or raw not in answers:
        reading.problems.append(f"{path}: {raw!r} is not one of the page lines offered; copy one exactly")
        return raw, None
    chosen = answers[raw]
    if chosen is None:
        return _ABSENT, None
    return chosen.value, Sourced("line", chosen.line)


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _reads_text(plan: Plan) -> bool:
    return isinstance(plan, _Leaf) and plan.kind == "text"


def _one_line_fields(plan: _Object, raw: dict[str, Any], data: dict[str, Any], sources: dict[str, Any],
                     reading: _Reading, path: str) -> None:
    """A record's text fields that repeat what another of its fields read from the same line take
    the one piece of that line left to them (in place; see the module docstring)."""
    # Text field -> (its line, the words it read). A number is left out: its digits may belong to a
    # name ('iPhone 15'), so they say nothing about which piece is whose.
    taken = {key: (source.line, data[key]) for key, source in sources.items()
             if isinstance(source, Sourced) and source.line is not None and isinstance(data.get(key), str)
             and _reads_text(plan.props[key])}
    said: set[str] = set()  # fields a re-ask already names (two fields that answered the same words: one problem)
    for key, (line, words) in taken.items():
        if key in said:
            continue
        others = {other: w for other, (at, w) in taken.items()
                  if other != key and at.number == line.number and w.strip() and _norm(w) in _norm(words)}
        same = {other for other, w in others.items() if _norm(w) == _norm(words)}
        rest = [piece for piece in pieces(words) if not any(_norm(w) in _norm(piece) for w in others.values())]
        where, answered = f"{path}.{key}", repr(raw.get(key))
        named = ", ".join(f"{path}.{other}" for other in others)
        if not others or (not same and not rest):  # no other field's words, or only inside this field's one piece
            continue
        if not same and len(rest) == 1:
            data[key] = rest[0]
            reading.repairs.append(repair("line_part", where, answered, f"read {rest[0]!r}: the part of line "
                                          f"[{line.number}] that {named} did not take", "corrected"))
            continue
        said.update(same)
        if where in reading.asked:
            reading.repairs.append(repair("line_part", where, answered, "kept as answered after one re-ask", "re-asked"))
        else:
            reading.asked.update([where, *(f"{path}.{other}" for other in same)])
            offered = [answer for answer, meant in reading.choices.get("text", {}).items()
                       if meant is not None and meant.line.number == line.number and meant.value in pieces(line.text)]
            reading.problems.append(f"{where}: {answered} holds what {named} took from the same line: answer each "
                                    f"field with its own part of the line, one of {offered!r}")
            reading.repairs.append(repair("line_part", where, answered, f"re-asked with the {len(offered)} part(s) "
                                          f"of line [{line.number}]", "re-asked"))


def read_answer(data: Any, plan: Plan, choices: Mapping[ChoiceKind, Mapping[str, Choice | None]],
                asked: set[str] | None = None) -> tuple[list[str], Any, Any, list[Repair]]:
    """(problems, the caller's data, its sources tree, the repairs made) from a choice answer's
    ``data``; ``asked``: the paths re-asked by earlier answers of the same request."""
    reading = _Reading(choices, asked if asked is not None else set())
    value, sources = _read(data, plan, reading, "data")
    if isinstance(value, _Absent):
        value = None
    return reading.problems, value, sources, reading.repairs
