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

Two modes. A client in choice mode (``LLMClient.choice_mode``: the default for local models)
is shown the page's numbered text lines and answers each field with one of them; the library
reads the value from that line (:mod:`._extract_choice`, :mod:`._extract_lines`); a long page's
parts are cut from those lines, sized by them and their answers, and a list that fits one part is
never cut (:mod:`._extract_parts`). Otherwise
(and for a schema choice mode cannot follow, or an instruction without a schema) the model
writes the values in the caller's schema, and its near misses are checked against the page
(:mod:`._extract_repairs`): a link's name for a URL field is that link when the page's links so
named go to one URL (else re-asked with their ids); an optional string found nowhere in the
page's text is left out, a required one re-asked once. Each such repair is in the
:class:`~._extract_report.ExtractResult` (``report=True``) and, as a note, in the inference log.
"""

from __future__ import annotations

import copy
import json
import logging
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from pydantic import BaseModel

from .._errors import InvalidSchemaError, OutputValidationError
from .._prompts.common import Fence, page_fence
from .._prompts.extract import (
    DEFAULT_EXTRACT_INSTRUCTION,
    EXTRACTION_DESCRIPTION,
    NOT_ON_PAGE,
    extract_system,
    extract_user,
)
from .._session import OperationContext
from .._types import Repair
from .._util import schema_dict
from ..llm import ImagePart
from ..llm._structured import check_json_schema, validation_errors
from ..snapshot import OutlineChunk
from ._budget import chunk_budget, prompt_tokens, reask_reserve
from ._extract_choice import Plan, choice_kinds, choice_wire, plan_of, read_answer
from ._extract_lines import Choice, ChoiceKind, PageLine, line_choices, page_lines
from ._extract_parts import LineParts, line_cost, line_parts
from ._extract_repairs import PageWords, repair
from ._extract_report import ExtractedValue, ExtractMode, ExtractResult, values_of
from ._extract_schema import (
    Links,
    answer_data,
    complete,
    empty_required,
    merge,
    merge_sourced,
    off_page,
    schema_words,
    shows_data,
    to_wire_schema,
)
from ._pipeline import PageParts, PageRead, Question, ask_part, look, require_sight, split_page, with_page_screenshot

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
    #: How the schema is answered in choice mode; None: the model writes the values (the plain schema).
    plan: Plan | None = None

    @property
    def mode(self) -> ExtractMode:
        return "text" if self.free_text else "choice" if self.plan is not None else "schema"

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
    #: Choice mode: where each value came from (a tree of the data's shape).
    sources: Any = None
    #: The near misses corrected or left out in this answer, and the paths left out.
    repairs: tuple[Repair, ...] = ()
    dropped: tuple[str, ...] = ()


@dataclass
class _Asked:
    """One part's re-asks, kept across the answers of its request: what was re-asked and why
    (said in the result even when a later answer is the one taken), and the fields re-asked
    once (a value not on the page, a line another field took): a second such answer is kept."""

    events: list[Repair] = field(default_factory=list)
    once: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class _Reading:
    """One reading of the page (its parts asked until done): the merged data, judged once."""

    merged: Any
    calls: int
    checked: _Checked
    sources: Any = None
    repairs: tuple[Repair, ...] = ()
    dropped: tuple[str, ...] = ()

    def found(self, target: _Target) -> bool:
        # An answer of nothing but empty strings is what a page still rendering gives, as much as
        # an empty required field is: looked for again while the page can change by itself.
        return not self.checked.errors and shows_data(self.merged, target.schema)


def _prompt(target: _Target, earlier: str | None, screenshot_note: str, fence: Fence, outline: str,
            part: tuple[int, int] | None, *, lines: str | None = None) -> tuple[str, str]:
    """The request's words: the outline (plain schema), or the page's ``lines`` (choice mode)."""
    return (extract_system(fence) + screenshot_note,
            extract_user(target.instruction, outline if lines is None else lines, fence, part=part, earlier=earlier,
                         choice=lines is not None))


def _leave_out_off_page(data: Any, target: _Target, words: PageWords, asked: _Asked
                        ) -> tuple[list[str], list[Repair], list[str]]:
    """Optional string fields whose value is nowhere in the page's text, left out of ``data`` (in
    place); a required one is a problem the first time (one re-ask), kept the second. Returns
    (problems, repairs, paths left out)."""
    problems: list[str] = []
    repairs: list[Repair] = []
    dropped: list[str] = []
    for miss in off_page(data, target.schema, target.schema, words):
        answered = repr(miss.holder[miss.key])
        if not miss.required:
            del miss.holder[miss.key]
            dropped.append("$" + miss.path.removeprefix("data"))
            repairs.append(repair("value_not_on_page", miss.path, answered,
                                  "left out the optional field: the value is nowhere in the page's text", "dropped"))
        elif miss.path not in asked.once:
            asked.once.add(miss.path)
            problems.append(f"{miss.path}: {answered} appears nowhere on the page; copy the value as the page writes "
                            "it, or answer '' when the page does not show it")
            asked.events.append(repair("value_not_on_page", miss.path, answered,
                                       "re-asked once (the field is required)", "re-asked"))
        else:
            repairs.append(repair("value_not_on_page", miss.path, answered,
                                  "kept as answered after one re-ask: the field is required", "re-asked"))
    return problems, repairs, dropped


def _check(target: _Target, links: Links, words: PageWords, whole: bool, asked: _Asked,
           out: dict[str, Any]) -> tuple[list[str], _PartAnswer]:
    """A part's answer as data; URL fields that name no link of the page, required strings not on
    the page (once), or (for a page read whole) data that does not fit the schema, are problems
    sent back to the model. Optional strings not on the page are left out."""
    problems, data, repairs = answer_data(out["data"], target.schema, links)
    if problems:  # the links re-asked are said whichever answer is taken
        asked.events.extend(r for r in repairs if r.outcome == "re-asked")
        return problems, _PartAnswer(None, False)
    dropped: list[str] = []
    if not target.free_text:
        problems, more, dropped = _leave_out_off_page(data, target, words, asked)
        if problems:
            return problems, _PartAnswer(None, False)
        repairs += more
    checked = target.judge(data) if whole else None
    if checked is not None and checked.errors:
        return checked.errors, _PartAnswer(None, False)
    return [], _PartAnswer(data, bool(out.get("instruction_satisfied")), checked, repairs=tuple(repairs),
                           dropped=tuple(dropped))


def _check_choice(target: _Target, plan: Plan, choices: dict[ChoiceKind, dict[str, Choice | None]], whole: bool,
                  asked: _Asked, out: dict[str, Any]) -> tuple[list[str], _PartAnswer]:
    """A choice-mode answer read from its lines (a record's fields that share a line take its
    parts, or are re-asked once); for a page read whole, data that does not fit the schema (a
    required number no line holds) is sent back to the model."""
    problems, data, sources, repairs = read_answer(out["data"], plan, choices, asked.once)
    if problems:  # the fields re-asked are said whichever answer is taken
        asked.events.extend(r for r in repairs if r.outcome == "re-asked")
        return problems, _PartAnswer(None, False)
    checked = target.judge(data) if whole else None
    if checked is not None and checked.errors:
        return checked.errors, _PartAnswer(None, False)
    return [], _PartAnswer(data, bool(out.get("instruction_satisfied")), checked, sources, repairs=tuple(repairs))


def _shown(merged: Any, reserve: int) -> str:
    """What earlier parts gave, as the next part's prompt shows it (so the model can say it is done)."""
    earlier = json.dumps(merged, ensure_ascii=False, default=str)
    if len(earlier) > reserve * 4 - 40:
        earlier = earlier[: reserve * 4 - 40] + " …(truncated)"
    return earlier


def _choice_parts(ctx: OperationContext, target: _Target, plan: Plan, page: PageRead, lines: list[PageLine],
                  note: str, reserve: int) -> LineParts:
    """The page's lines in parts that fit one choice-mode request each, with ``reserve`` kept for
    what earlier parts gave (:mod:`._extract_parts`)."""
    kinds = sorted(choice_kinds(plan))
    system, user = _prompt(target, None, note, Fence(), "", (99, 99), lines="")  # as long as any part's header
    bare = choice_wire(plan, {kind: {NOT_ON_PAGE: None} for kind in kinds})
    room = chunk_budget(ctx.token_budget, (system, user), bare, extra_reserve=reserve + 30)
    return line_parts(page.text, lines, partial(line_cost, kinds=kinds), room=room, rank_by=target.instruction,
                      hints=schema_words(target.schema))


def _choice_question(ctx: OperationContext, target: _Target, plan: Plan, shown: list[PageLine], parts: PageParts,
                     chunk: OutlineChunk, prompt: Any, asked: _Asked) -> Question[_PartAnswer]:
    """The choice-mode question about one part's ``shown`` lines: every answer each field may give
    about them (fewer parts of lines when the request would not fit the budget). A page with no
    line is asked too: "not on the page" is still an answer, and the model still answers what no
    line holds."""
    fence = page_fence(ctx.page, chunk.text)  # the fence ask_part uses: answers neutralised as the lines are
    text = "\n".join(line.shown for line in shown)
    system, user = prompt(fence, chunk.text, parts.part(chunk), lines=text)
    room = ctx.token_budget - reask_reserve(ctx.token_budget)
    for detail in (2, 1, 0):
        choices = {kind: {fence.neutralise(answer): meant for answer, meant in line_choices(shown, kind, detail=detail).items()}
                   for kind in sorted(choice_kinds(plan))}
        wire = choice_wire(plan, choices)
        if prompt_tokens((system, user), wire) <= room:
            break
    return Question(partial(prompt, lines=text), wire, partial(_check_choice, target, plan, choices, parts.total == 1, asked))


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
    choosing = target.plan is not None
    by_lines: LineParts | None = None
    if target.plan is not None:  # parts of the page's lines, sized by them (the request shows no outline)
        by_lines = _choice_parts(ctx, target, target.plan, page, page_lines(page.text, page.snapshot.url_map),
                                 note, reserve)
        parts = by_lines.parts
    else:
        parts = split_page(ctx, page.text, partial(_prompt, target, None, note), full_wire, rank_by=target.instruction,
                           hints="" if target.free_text else schema_words(target.schema), extra_reserve=reserve + 30)
    wire = to_wire_schema(target.schema, partial=True) if parts.total > 1 else full_wire
    links, words = Links(page.snapshot), PageWords(page.text, redact=ctx.variables.redact)
    # Part index -> what it gave; merged in page order, whatever order the parts were asked in.
    given: dict[int, _PartAnswer] = {}
    events: list[Repair] = []
    merged: Any = None
    sources: Any = None
    for chunk in parts.chunks:
        earlier = _shown(merged, reserve) if given else None
        prompt = partial(_prompt, target, earlier, note)
        asked = _Asked()
        if target.plan is not None and by_lines is not None:
            question = _choice_question(ctx, target, target.plan, by_lines.lines[chunk.index], parts, chunk, prompt,
                                        asked)
        else:
            question = Question(prompt, wire, partial(_check, target, links, words, parts.total == 1, asked))
        try:
            answer = await ask_part(ctx, page, parts, chunk, question, purpose="extract", images=images)
        finally:
            events += asked.events
        assert answer is not None  # only an element question can go unasked
        given[chunk.index] = answer
        order = sorted(given)
        merged = target.merged([given[i].data for i in order])
        if choosing:
            merged, sources = None, None
            for i in order:
                merged, sources = ((given[i].data, given[i].sources) if merged is None
                                   else merge_sourced(merged, sources, given[i].data, given[i].sources))
        if answer.satisfied or (not target.free_text and complete(merged, target.schema)):
            break
        logger.debug("extract: nothing conclusive in part %d of %d", chunk.index + 1, parts.total)
    logger.info("extract %r: %d call(s) over %d part(s)", target.instruction, len(given), parts.total)
    # A page read whole was judged by the check; a merge of parts is judged here, once.
    whole = next(iter(given.values())).checked if len(given) == 1 else None
    repairs = tuple(events) + tuple(r for i in sorted(given) for r in given[i].repairs)
    dropped = tuple(d for i in sorted(given) for d in given[i].dropped)
    return _Reading(merged, len(given), whole if whole is not None else target.judge(merged), sources, repairs, dropped)


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
                  screenshot: bool = False) -> ExtractResult[Any]:
    """The data and how it was read (``Stagehand.extract`` hands back ``.data`` unless asked for the report)."""
    if instruction is None and schema is None:
        snapshot = await ctx.session.snapshot(selector=selector)
        return ExtractResult(data={"page_text": snapshot.tree}, mode="page_text")
    user, model = _user_schema(schema) if schema is not None else (copy.deepcopy(_DEFAULT_SCHEMA), None)
    client = ctx.model()
    plan = plan_of(user) if schema is not None and client.choice_mode else None
    target = _Target(instruction or DEFAULT_EXTRACT_INSTRUCTION, user, model, free_text=schema is None, plan=plan)
    if screenshot:
        require_sight(client, "extract(screenshot=True)")
    looked = await look(ctx, lambda page: _read(ctx, target, page, selector=selector, screenshot=screenshot),
                        lambda reading: reading.found(target), selector=selector)
    reading = looked.value
    repairs = [Repair(kind=r.kind, answered=ctx.variables.redact(r.answered), done=ctx.variables.redact(r.done),
                      outcome=r.outcome) for r in reading.repairs]
    if repairs:
        await client.log_note("extract", {"instruction": target.instruction,
                                          "repairs": [r.model_dump() for r in repairs]},
                              secrets=ctx.variables.secret_values())
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
    values = values_of(reading.sources)
    if target.free_text:
        values = [ExtractedValue(path="$.extraction", source="generated")]
    return ExtractResult(data=reading.checked.value, mode=target.mode, values=values, repairs=repairs,
                         dropped=list(reading.dropped), calls=reading.calls, waited=round(looked.waited, 3))
