"""Choice mode for observe()/act(): the model picks lines, the code maps them to ids.

When the client's :attr:`~stagehand_py.llm.LLMClient.choice_mode` is on, the answer schema's
``element`` is an enum of the chunk's actionable elements written ``"button: Log in [0-11]"``
(see :mod:`stagehand_py._prompts.choice`). The chosen line is mapped back to its id here and
the answer becomes the ordinary :class:`ObserveAnswer`/:class:`ActAnswer`, so the checks,
re-asks and Actions downstream are the same in both modes.

Budget: the choices repeat the chunk's actionable lines (in the user message and, in the
schema, once more), so choice mode gives each chunk a third of the page budget
(:func:`~stagehand_py._operations._common.chunk_budget` with ``choice=True``) and, as a safety
net, drops choices from the end until the request fits the token budget.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from .._errors import ConfigurationError
from .._prompts.act import ActAnswer
from .._prompts.choice import NO_CHOICE, choice_line, choice_schema, choices_block
from .._prompts.common import Fence
from .._prompts.observe import ObservedElement
from ..llm import ImagePart, LLMClient, SystemMessage, UserMessage
from ._common import ask, prompt_tokens, reask_reserve

__all__ = ["ACTIONABLE_ROLES", "ask_elements", "candidates", "elements_from_choices"]

logger = logging.getLogger("stagehand_py._operations")

T = TypeVar("T")

#: Outline roles a user can act on; only these become choices.
ACTIONABLE_ROLES = frozenset({
    "button", "link", "textbox", "searchbox", "combobox", "listbox", "option", "checkbox", "radio",
    "switch", "slider", "spinbutton", "menuitem", "menuitemcheckbox", "menuitemradio", "tab",
    "treeitem", "DisclosureTriangle", "ListBoxOption", "MenuListOption",
})

_LINE = re.compile(r"^\s*\[(\d+-\d+)\] ([A-Za-z]+)(.*)$")
_FLAGS = re.compile(r"(?:\s\[[a-z]+\])+$")


def candidates(outline: str, fence: Fence) -> dict[str, str]:
    """The choices of ``outline`` in page order: choice line -> element id.

    Page text is neutralised against ``fence`` (the choices also appear in the schema, where
    no fence surrounds them); state flags such as ``[checked]`` are left out.
    """
    out: dict[str, str] = {}
    for raw in outline.split("\n"):
        m = _LINE.match(raw)
        if m is None or m.group(2) not in ACTIONABLE_ROLES:
            continue
        tail = _FLAGS.sub("", m.group(3))
        named = tail.startswith(": ")
        line = choice_line(m.group(2), tail[2:] if named else "", m.group(1), details="" if named else tail)
        out[fence.neutralise(line)] = m.group(1)
    return out


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


def _fit(choices: dict[str, str], fixed: Callable[[Sequence[str]], int], limit: int) -> dict[str, str]:
    """``choices`` cut from the end until ``fixed(choices)`` (the request's tokens) fits ``limit``."""
    lines = list(choices)
    while lines and fixed(lines) > limit:
        lines = lines[: max(0, len(lines) - max(1, len(lines) // 10))]
    if len(lines) < len(choices):
        logger.info("choice mode: %d of %d choices fit the token budget", len(lines), len(choices))
    return {line: choices[line] for line in lines}


async def ask_elements(
    client: LLMClient,
    system: str,
    user: str,
    answer: type[BaseModel],
    *,
    outline: str,
    fence: Fence,
    token_budget: int,
    purpose: str,
    secrets: Iterable[str],
    check: Callable[[Any], tuple[list[str], list[T]]],
    images: Sequence[ImagePart] = (),
) -> list[T]:
    """:func:`~stagehand_py._operations._common.ask` for an element answer (``ObserveAnswer`` or
    ``ActAnswer``), in choice mode when the client asks for it.

    ``outline`` is the page text shown in ``user`` (its actionable lines become the choices);
    ``check`` receives the answer as ``answer`` either way. A chunk with no actionable element
    costs no request in choice mode: nothing could be chosen.
    """
    if not client.choice_mode:
        return await ask(client, system, user, answer, purpose=purpose, secrets=secrets, check=check, images=images)
    choices = candidates(outline, fence)
    if not choices:
        logger.info("%s: no actionable element in this part of the page; nothing to choose", purpose)
        return []
    single = issubclass(answer, ActAnswer)
    opens = "opens_options" in answer.model_fields

    def tokens(lines: Sequence[str]) -> int:
        schema = choice_schema(lines, single=single, opens_options=opens)
        text = f"{user}\n\n{choices_block(lines, fence, single=single)}"
        return prompt_tokens([SystemMessage(system), UserMessage(text)], schema)

    choices = _fit(choices, tokens, token_budget - reask_reserve(token_budget))
    if not choices:
        raise ConfigurationError(
            f"choice mode: token_budget={token_budget} leaves no room for a single choice next to the prompt; "
            "raise token_budget."
        )
    lines = [*choices, NO_CHOICE]
    choices = {**choices, NO_CHOICE: ""}
    schema = choice_schema(lines, single=single, opens_options=opens)
    text = f"{user}\n\n{choices_block(lines, fence, single=single)}"

    def check_choice(out: dict[str, Any]) -> tuple[list[str], list[T]]:
        data: dict[str, Any] = {"elements": elements_from_choices(out, choices)}
        if opens:
            data["opens_options"] = bool(out.get("opens_options", False))
        return check(answer.model_validate(data))

    return await ask(client, system, text, schema, purpose=purpose, secrets=secrets, check=check_choice, images=images)
