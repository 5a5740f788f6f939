"""extract(): structured data from the page, in one model call per page part.

- The caller's schema (pydantic class or JSON Schema) is sent inside a wrapper object
  ``{"data": <schema>, "instruction_satisfied": bool}``: the data and the "am I done?" answer
  come back together (the TS anchor spends a second call on the latter). A non-object schema
  needs no extra wrapping: it is simply the type of ``data``.
- URL fields (``format: uri`` / pydantic ``HttpUrl``, ``AnyUrl``) travel as element ids; the
  answer's ids are replaced by the absolute URLs of the snapshot's url map (as the browser
  resolves the ``href``). A model that answers with one of the page's link URLs instead is
  taken at its word; anything else that is not a link is sent back to the model (re-ask).
- A page whose outline exceeds the chunk budget is read part by part, the parts ranked by
  relevance to the instruction and the schema (field names, and above all the literal values
  the instruction names, such as a row's label): best first. Reading stops once the model says
  the instruction is satisfied, or once a list-free schema has every field filled (a lookup);
  a list the model says goes on walks every part. Results are merged in page order (lists
  concatenated without repeats, objects merged key by key, the first non-empty scalar kept).
- When required fields stay empty, or every field is (only blank strings and nulls), while the
  page is still changing (late content), the page is read again as it changes, up to
  ``dom_settle_timeout`` (:func:`._pipeline.look`).
- The data is judged by the caller's schema once per reading: a page read whole by the check
  that may re-ask the model, a page read in parts once its answers are merged. The schema
  walkers are in :mod:`._extract_schema`; each part is asked a :class:`._pipeline.Question`.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from pydantic import BaseModel

from .._errors import InvalidSchemaError, OutputValidationError
from .._prompts.common import Fence
from .._prompts.extract import DEFAULT_EXTRACT_INSTRUCTION, EXTRACTION_DESCRIPTION, extract_system, extract_user
from .._session import OperationContext
from .._util import schema_dict
from ..llm import ImagePart
from ..llm._structured import check_json_schema, validation_errors
from ._extract_schema import (
    answer_data,
    complete,
    empty_required,
    link_lookup,
    merge,
    schema_words,
    shows_data,
    to_wire_schema,
)
from ._pipeline import PageRead, Question, ask_part, look, require_sight, split_page, with_page_screenshot

__all__ = ["extract"]

logger = logging.getLogger("stagehand_py._operations")

#: The schema of an extract() given an instruction and no schema: the page's answer as text.
_DEFAULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"extraction": {"type": "string", "description": EXTRACTION_DESCRIPTION}},
    "required": ["extraction"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class _Checked:
    """Data judged by the caller's schema: what does not fit (nothing when it fits) and the value it makes."""

    errors: list[str]
    value: Any


@dataclass(frozen=True)
class _Target:
    """What the caller asked for, resolved once per call."""

    instruction: str
    schema: dict[str, Any]
    model: type[BaseModel] | None
    #: No schema was given: the answer is the default schema's text, and parts' texts are joined.
    free_text: bool

    def judge(self, data: Any) -> _Checked:
        """The caller's schema judges ``data`` (llm/_structured.py owns the check and its wording)."""
        return _Checked(*validation_errors(data, self.schema, self.model, root="$.data", limit=10))

    def merged(self, parts: list[Any]) -> Any:
        """The parts' data (in page order) as one (see the module docstring)."""
        out: Any = None
        for data in parts:
            out = data if out is None else merge(out, data, join_strings=self.free_text)
        return out


@dataclass(frozen=True)
class _PartAnswer:
    """What the model said about one part: its data (URL ids mapped, absent values said as the
    schema allows) and whether it says the instruction is satisfied."""

    data: Any
    satisfied: bool
    #: The data judged by the whole schema when the page was one part (a part of a longer page
    #: may lack required fields: it is judged once merged).
    checked: _Checked | None = None


@dataclass(frozen=True)
class _Reading:
    """One reading of the page (its parts asked until done): the merged data, judged once."""

    merged: Any
    calls: int
    checked: _Checked

    def found(self, target: _Target) -> bool:
        # An answer of nothing but empty strings is what a page still rendering gives, as much as
        # an empty required field is: looked for again while the page can change by itself.
        return not self.checked.errors and shows_data(self.merged, target.schema)


def _prompt(target: _Target, earlier: str | None, screenshot_note: str, fence: Fence, outline: str,
            part: tuple[int, int] | None) -> tuple[str, str]:
    return (extract_system(fence) + screenshot_note,
            extract_user(target.instruction, outline, fence, part=part, earlier=earlier))


def _check(target: _Target, lookup: Callable[[str], str | None], whole: bool,
           out: dict[str, Any]) -> tuple[list[str], _PartAnswer]:
    """A part's answer as data; URL fields that name no link of the page, or (for a page read
    whole) data that does not fit the schema, are problems sent back to the model."""
    problems, data = answer_data(out["data"], target.schema, lookup)
    if problems:
        return problems, _PartAnswer(None, False)
    checked = target.judge(data) if whole else None
    if checked is not None and checked.errors:
        return checked.errors, _PartAnswer(None, False)
    return [], _PartAnswer(data, bool(out.get("instruction_satisfied")), checked)


def _shown(merged: Any, reserve: int) -> str:
    """What earlier parts gave, as the next part's prompt shows it (so the model can say it is done)."""
    earlier = json.dumps(merged, ensure_ascii=False, default=str)
    if len(earlier) > reserve * 4 - 40:
        earlier = earlier[: reserve * 4 - 40] + " …(truncated)"
    return earlier


async def _read(ctx: OperationContext, target: _Target, page: PageRead, *, selector: str | None,
                screenshot: bool) -> _Reading:
    """Ask about the parts of ``page``, best first, until the model is satisfied or a lookup is complete."""
    note = ""
    images: list[ImagePart] = []
    if screenshot:  # of the page as read; every part's request carries it
        note, images = await with_page_screenshot(ctx.page, "", selector=selector, variables=ctx.variables)
    # Room for what earlier parts gave; the reserve also covers the few words that introduce it.
    reserve = ctx.token_budget // 8
    full_wire = to_wire_schema(target.schema)
    parts = split_page(ctx, page.text, partial(_prompt, target, None, note), full_wire,
                       rank_by=target.instruction, hints="" if target.free_text else schema_words(target.schema),
                       extra_reserve=reserve + 30)
    wire = to_wire_schema(target.schema, partial=True) if parts.total > 1 else full_wire
    check = partial(_check, target, link_lookup(page.snapshot), parts.total == 1)
    # Part index -> what it gave; merged in page order, whatever order the parts were asked in.
    given: dict[int, _PartAnswer] = {}
    merged: Any = None
    for chunk in parts.chunks:
        earlier = _shown(merged, reserve) if given else None
        answer = await ask_part(ctx, page, parts, chunk, Question(partial(_prompt, target, earlier, note), wire, check),
                                purpose="extract", images=images)
        assert answer is not None  # only an element question can go unasked
        given[chunk.index] = answer
        merged = target.merged([given[i].data for i in sorted(given)])
        if answer.satisfied or (not target.free_text and complete(merged, target.schema)):
            break
        logger.debug("extract: nothing conclusive in part %d of %d", chunk.index + 1, parts.total)
    logger.info("extract %r: %d call(s) over %d part(s)", target.instruction, len(given), parts.total)
    # A page read whole was judged by the check; a merge of parts is judged here, once.
    whole = next(iter(given.values())).checked if len(given) == 1 else None
    return _Reading(merged, len(given), whole if whole is not None else target.judge(merged))


def _user_schema(schema: Any) -> tuple[dict[str, Any], type[BaseModel] | None]:
    """The JSON Schema of ``schema`` and the pydantic class when there is one; InvalidSchemaError otherwise."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema_dict(schema), schema
    if isinstance(schema, dict):
        check_json_schema(schema, what="extract(schema=...)")
        return copy.deepcopy(schema), None
    raise InvalidSchemaError(
        f"extract(schema=...) must be a pydantic model class or a JSON Schema dict, not {type(schema).__name__}."
    )


async def extract(ctx: OperationContext, instruction: str | None, schema: Any, *, selector: str | None,
                  screenshot: bool = False) -> Any:
    if instruction is None and schema is None:
        snapshot = await ctx.session.snapshot(selector=selector)
        return {"page_text": snapshot.tree}
    user, model = _user_schema(schema) if schema is not None else (copy.deepcopy(_DEFAULT_SCHEMA), None)
    target = _Target(instruction or DEFAULT_EXTRACT_INSTRUCTION, user, model, free_text=schema is None)
    client = ctx.model()
    if screenshot:
        require_sight(client, "extract(screenshot=True)")
    looked = await look(ctx, lambda page: _read(ctx, target, page, selector=selector, screenshot=screenshot),
                        lambda reading: reading.found(target), selector=selector)
    reading = looked.value
    waited = f" (after waiting {looked.waited:.1f} s for the page to change)" if looked.waited else ""
    if reading.checked.errors:
        errors = reading.checked.errors
        raise OutputValidationError(
            f"the data extracted from {reading.calls} part(s) of the page{waited} does not fit the schema: "
            f"{'; '.join(errors[:5])}. Make fields optional that a page may lack, or narrow the page with selector=.",
            last_output=reading.merged, attempts=reading.calls, usage=None, errors=errors,
        )
    if looked.waited:
        logger.info("extract %r: %s still empty%s", target.instruction,
                    ", ".join(empty_required(reading.merged, user, user)), waited)
    return reading.checked.value
