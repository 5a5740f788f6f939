"""What act() says to the model: plan one action, pick an option after a dropdown opened,
and re-locate an element for self-healing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field

from .common import Fence, fence_rules, instruction_with_outline, variables_block
from .observe import METHODS_GUIDE, ObservedElement

__all__ = [
    "ActAnswer",
    "act_system",
    "act_user",
    "dropdown_user",
    "heal_system",
    "heal_user",
]


class ActAnswer(BaseModel):
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


def act_system(fence: Fence) -> str:
    return (
        "You help a program drive a web browser, one action at a time. You are shown an outline "
        "of a web page: one line per element, '[id] role: name' followed by state such as "
        "value=\"...\", [checked], [collapsed] or [disabled], indented under its parent. Choose "
        "the single element and action that carries out the user's instruction.\n"
        "Rules:\n"
        "- Answer only with an id that appears in the outline; never invent an id.\n"
        "- Prefer the element that receives the input (the textbox, the button, the option) over "
        "its container or its label text.\n"
        "- For a native select (a combobox whose options are listed under it), use select_option "
        "with the option's label. For a custom dropdown whose options are not shown yet, click it "
        "and set opens_options to true; you will then be shown the options that appeared.\n"
        "- When no element can carry out the instruction, return an empty list.\n"
        "- When the instruction gives no value to fill, type, select or press, leave the arguments "
        "empty ([]) rather than invent one: the user will supply it.\n"
        f"{METHODS_GUIDE}\n\n"
        f"{fence_rules(fence)}"
    )


#: The user message: instruction, variables, then the fenced outline (or one part of it).
act_user = instruction_with_outline


def dropdown_user(instruction: str, clicked: str, new_lines: str, fence: Fence, *, variables: Mapping[str, str]) -> str:
    """Second step of a custom dropdown: only the lines that appeared after the click."""
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
    return (
        "You help a program repair a browser action whose element changed or disappeared since "
        "the action was planned. You are shown the action (what it did, its method and "
        "arguments) and a fresh outline of the page: one line per element, '[id] role: name'. "
        "Find the element that now plays the same part and return it with the same method and "
        "arguments; keep %name% placeholders as they are. Answer only with an id from the outline. "
        "When no element fits, return an empty list.\n\n"
        f"{fence_rules(fence)}"
    )


def heal_user(description: str, method: str, arguments: Sequence[str], outline: str, fence: Fence,
              *, part: tuple[int, int] | None = None) -> str:
    where = "" if part is None else f" (part {part[0]} of {part[1]} of a long page)"
    return (
        f"Action to repair:\n- description: {description or '(none)'}\n- method: {method}\n"
        f"- arguments: {list(arguments)!r}\n\n"
        f"Page outline{where}:\n{fence.wrap(outline, 'page outline')}"
    )
