"""What act() says to the model: plan one action, pick an option after a dropdown opened,
and re-locate an element for self-healing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import Field

from .common import Fence, instruction_with_outline, page_section, page_then_task, preamble, variables_block
from .observe import ElementAnswer, ObservedElement

__all__ = [
    "ActAnswer",
    "act_system",
    "act_user",
    "dropdown_user",
    "heal_system",
    "heal_user",
]


class ActAnswer(ElementAnswer):
    """act()'s structured answer: at most one action."""

    elements: list[ObservedElement] = Field(
        description="Exactly one element with the action that carries out the instruction, or an empty list when no element on the page can."
    )
    opens_options: bool = Field(
        description=(
            "True only when the chosen action is a click that opens a custom dropdown, menu or "
            "listbox (not a native select) whose option must be chosen next to finish the instruction."
        )
    )


#: act()'s closing line, after the instruction (the task is :data:`.common.ELEMENT_TASK`, the
#: same as observe()'s: it explains opens_options too, in the words that worked for a 1.5B model;
#: saying more about the flag here made it set the flag on plain clicks).
ACT_ANSWER = "Answer: exactly one element."


def act_system(fence: Fence) -> str:
    """The shared preamble (every verb's system prompt is the same; see :mod:`.common`)."""
    return preamble(fence)


def act_user(instruction: str, outline: str, fence: Fence, *, variables: Mapping[str, str],
             part: tuple[int, int] | None = None) -> str:
    """The user message: the fenced outline (or one part), then the task, instruction, variables and answer line."""
    return instruction_with_outline(instruction, outline, fence, variables=variables, part=part, answer=ACT_ANSWER)


def dropdown_user(instruction: str, clicked: str, new_lines: str, fence: Fence, *, variables: Mapping[str, str]) -> str:
    """Second step of a custom dropdown: only the lines that appeared after the click (page text
    no earlier request held, so nothing to share: the task goes first)."""
    sections = [
        f"Instruction: {instruction}",
        (
            f"To carry it out, '{clicked}' was clicked. These elements appeared on the page after the "
            "click. Choose the one (usually an option or menu item) that finishes the instruction, "
            "with its action (normally click); set opens_options to false."
        ),
    ]
    if block := variables_block(variables):
        sections.append(block)
    sections.append(f"New elements:\n{fence.wrap(new_lines, 'new page elements')}")
    return "\n\n".join(sections)


def heal_system(fence: Fence) -> str:
    """The shared preamble (every verb's system prompt is the same; see :mod:`.common`)."""
    return preamble(fence)


def heal_user(description: str, method: str, arguments: Sequence[str], outline: str, fence: Fence,
              *, part: tuple[int, int] | None = None) -> str:
    """The fresh outline first (what the failed act's request shared), then the action to repair."""
    return page_then_task(page_section(outline, fence, part), [
        "Task: repair a browser action whose element changed or disappeared since it was planned. Find the "
        "element of the outline that now plays the same part and return it with the same method and arguments; "
        "keep %name% placeholders as they are. When no element fits, return an empty list.",
        f"Action to repair:\n- description: {description or '(none)'}\n- method: {method}\n"
        f"- arguments: {list(arguments)!r}",
    ])
