"""Choice mode for observe()/act(): the model picks lines, the code maps them to ids.

When the client's :attr:`~stagehand_py.llm.LLMClient.choice_mode` is on, the answer schema's
``element`` is an enum of the chunk's actionable elements written ``"button: Log in [0-11]"``
(see :mod:`stagehand_py._prompts.choice`). The chosen line is mapped back to its id here and
the answer becomes the ordinary :class:`ObserveAnswer`/:class:`ActAnswer`, so the checks,
re-asks and Actions downstream are the same in both modes; the answer also knows the choices it
was picked from, so a re-ask lists valid ones as they were offered.

The method comes before the element, and ``fill``/``type`` may only name a choice that takes
text (:func:`~._near_misses.text_fields`): a constrained decoder offers a model that means to
type only the fields, never a link.

Budget: the choices repeat the chunk's actionable lines (in the user message and, in the
schema, once more), so choice mode gives each chunk a third of the page budget
(:func:`~stagehand_py._operations._budget.chunk_budget` with ``choice=True``) and, as a safety
net, drops choices from the end until the request fits the token budget.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from .._errors import ConfigurationError
from .._prompts.act import ActAnswer
from .._prompts.choice import NO_CHOICE, choice_line, choice_schema, with_choices
from .._prompts.common import Fence
from .._prompts.observe import ElementAnswer, ObservedElement
from ..snapshot import SnapshotElement
from ._budget import prompt_tokens, reask_reserve
from ._near_misses import text_fields
from ._relevance import closing_toggles, element_score, ranking_terms, sections

__all__ = ["MAX_CHOICES", "ChoiceRequest", "as_choice", "candidates", "elements_from_choices"]

logger = logging.getLogger("stagehand_py._operations")

#: A name this short says nothing alone ("No", "All", "2"): its choice line shows its section.
_SHORT_NAME = 3


def candidates(outline: str, fence: Fence) -> dict[str, str]:
    """The choices of ``outline`` in page order: choice line -> element id.

    Page text is neutralised against ``fence`` (the choices also appear in the schema, where
    no fence surrounds them); state flags such as ``[checked]`` are left out. An element whose
    name says nothing alone (very short, or shared with another choice of the same role) shows
    its nearest section label: ``"link: No (By in stock) [0-1969]"``.
    """
    found = [(element, labels) for element, labels in sections(outline.split("\n"))
             if element is not None and element.actionable]
    named = Counter((element.role, element.name) for element, _ in found)
    out: dict[str, str] = {}
    for element, labels in found:
        shown_value = "" if element.value is None else ' value="' + element.value.replace('"', '\\"') + '"'
        name = element.name
        if name and labels and (len(name.strip()) <= _SHORT_NAME or named[(element.role, name)] > 1):
            name = f"{name} ({labels[0]})"
        if name:
            line = choice_line(element.role, name + shown_value, element.id)
        else:
            line = choice_line(element.role, "", element.id, details=shown_value)
        out[fence.neutralise(line)] = element.id
    return out


def _contexts(outline: str) -> dict[str, tuple[SnapshotElement, tuple[str, ...]]]:
    """Element id -> (its record, its section labels), for ranking choices."""
    return {element.id: (element, labels) for element, labels in sections(outline.split("\n")) if element is not None}


def elements_from_choices(answer: dict[str, Any], choices: dict[str, str]) -> list[ObservedElement]:
    """The choice answer's elements as :class:`ObservedElement` (id from the chosen line)."""
    elements = []
    for item in answer.get("elements", []):
        line = item["element"]
        if line == NO_CHOICE:
            continue
        elements.append(ObservedElement(
            element_id=choices[line],
            description=line.rsplit(" [", 1)[0],
            method=item["method"],
            arguments=list(item.get("arguments", [])),
        ))
    return elements


#: More choices than this are cut to the ones most relevant to the instruction: every choice is
#: written twice (in the prompt and in the answer's enum), and a CPU model pays for each token.
MAX_CHOICES = 40


def _by_relevance(choices: dict[str, str], instruction: str | None,
                  contexts: dict[str, tuple[SnapshotElement, tuple[str, ...]]]) -> list[str]:
    """The choice lines most relevant to ``instruction`` first (its words found in the element's
    name or its section's labels), page order on ties."""
    wanted = ranking_terms(instruction or "")
    if not wanted:
        return list(choices)
    weights = dict.fromkeys(wanted, 1.0)

    def score(line: str) -> float:
        known = contexts.get(choices[line])
        if known is None:
            return 0.0
        return element_score(known[0], known[1], weights)

    return sorted(choices, key=lambda line: -score(line))  # sorted() is stable: page order on ties


def _fit(choices: dict[str, str], fixed: Callable[[Sequence[str]], int], limit: int,
         instruction: str | None = None, contexts: dict[str, tuple[SnapshotElement, tuple[str, ...]]] | None = None,
         ) -> dict[str, str]:
    """``choices`` without the least relevant ones until ``fixed(choices)`` (the request's tokens)
    fits ``limit`` and at most :data:`MAX_CHOICES` remain (with an instruction); page order kept."""
    ranked = _by_relevance(choices, instruction, contexts or {})
    if instruction and ranking_terms(instruction):
        ranked = ranked[:MAX_CHOICES]
    while ranked and fixed([line for line in choices if line in set(ranked)]) > limit:
        ranked = ranked[: max(0, len(ranked) - max(1, len(ranked) // 10))]
    kept = set(ranked)
    if len(kept) < len(choices):
        logger.info("choice mode: %d of %d choices kept (most relevant first, within the token budget)",
                    len(kept), len(choices))
    return {line: eid for line, eid in choices.items() if line in kept}


#: An instruction that gives a value to a field ("fill the title with X", "type X into search").
_FILLS = re.compile(r"^\s*(?:fill|type|enter|input|write)\b", re.IGNORECASE)
#: Roles that take a typed value.
_VALUE_ROLES = frozenset({"textbox", "searchbox", "combobox", "spinbutton"})


def _fitting(choices: dict[str, str], contexts: dict[str, tuple[SnapshotElement, tuple[str, ...]]],
             instruction: str | None, outline: str) -> dict[str, str]:
    """The act's candidates that fit ``instruction``: no toggle of an open group the instruction
    names an element of (:func:`~._relevance.closing_toggles`: it could only close that group);
    for an act that fills a field, only the fields that take a value (when the part has any):
    a small model then chooses among the form's fields, not every link of the page."""
    closing = closing_toggles(outline.split("\n"), instruction)
    choices = {line: eid for line, eid in choices.items() if eid not in closing} or choices
    if not instruction or not _FILLS.match(instruction):
        return choices
    fields = {line: eid for line, eid in choices.items()
              if eid in contexts and contexts[eid][0].role in _VALUE_ROLES}
    return fields or choices


@dataclass(frozen=True)
class ChoiceRequest:
    """A chunk's element question rewritten for choice mode: the user text with the choices,
    the enum schema, and ``check`` taking the choice answer to the caller's own check."""

    user: str
    output: dict[str, Any]
    check: Callable[[Any], tuple[list[str], Any]]


def as_choice(system: str, user: str, answer: type[BaseModel], *, outline: str, fence: Fence, token_budget: int,
              check: Callable[[Any], tuple[list[str], Any]], instruction: str | None,
              only: Callable[[SnapshotElement], bool] | None = None, rank_choices: bool = False) -> ChoiceRequest | None:
    """The element question (``ObserveAnswer`` or ``ActAnswer``) as a choice among ``outline``'s
    actionable lines, or None when the chunk has none (nothing could be chosen: no request).

    ``check`` receives the answer as ``answer`` either way, so checks and Actions downstream are
    the same in both modes. ``instruction`` ranks the choices when they must be cut; ``only``
    keeps the elements it accepts (a heal: those of the recorded role that can be acted on).
    ``rank_choices`` (an act on one part of a big page) also puts them most relevant first.
    """
    choices = candidates(outline, fence)
    contexts = _contexts(outline)
    if only is not None:
        choices = {line: eid for line, eid in choices.items() if eid in contexts and only(contexts[eid][0])}
    if not choices:
        return None
    single = issubclass(answer, ActAnswer)
    opens = "opens_options" in answer.model_fields
    fields = text_fields([element for element, _ in contexts.values()])
    takes_text = {line for line, eid in choices.items() if eid in fields}

    def schema_of(lines: Sequence[str]) -> dict[str, Any]:
        # fill/type may name only a choice that takes text (see choice_schema).
        return choice_schema(lines, single=single, opens_options=opens,
                             text_choices=[line for line in lines if line in takes_text])

    def tokens(lines: Sequence[str]) -> int:
        schema = schema_of(lines)
        text = with_choices(user, lines, fence)
        return prompt_tokens((system, text), schema)

    if single:  # act: narrowed to the candidates that fit the instruction
        choices = _fitting(choices, contexts, instruction, outline)
    choices = _fit(choices, tokens, token_budget - reask_reserve(token_budget), instruction, contexts)
    if not choices:
        raise ConfigurationError(
            f"choice mode: token_budget={token_budget} leaves no room for a single choice next to the prompt; "
            "raise token_budget."
        )
    if single and rank_choices:
        # A small model takes the first line that could do: on a big page the act's choices go
        # most relevant first (the book list's "No (By in stock)" before the table's row
        # checkboxes). A page sent whole keeps page order, so an act shares its observe's choices.
        choices = {line: choices[line] for line in _by_relevance(choices, instruction, contexts)}
    lines = [*choices, NO_CHOICE]
    offered = {eid: line for line, eid in choices.items()}
    choices = {**choices, NO_CHOICE: ""}

    def check_choice(out: dict[str, Any]) -> tuple[list[str], Any]:
        data: dict[str, Any] = {"elements": elements_from_choices(out, choices)}
        if opens:
            data["opens_options"] = bool(out.get("opens_options", False))
        validated = answer.model_validate(data)
        if isinstance(validated, ElementAnswer):
            validated.picked_from(offered)  # a re-ask then lists valid choices as they were offered
        return check(validated)

    return ChoiceRequest(with_choices(user, lines, fence), schema_of(lines), check_choice)
