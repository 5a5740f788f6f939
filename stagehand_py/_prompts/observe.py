"""What observe() says to the model, and the shape of its answer.

The model reads an outline of the page (one line per element, ``[id] role: name ...``) and
answers with element ids; the operation maps ids back to XPaths, so the model never writes
a selector.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from .._types import ActionMethod
from .common import Fence, fence_rules, instruction_with_outline

__all__ = [
    "DEFAULT_OBSERVE_INSTRUCTION",
    "METHODS_GUIDE",
    "ObserveAnswer",
    "ObservedElement",
    "observe_system",
    "observe_user",
]

#: Used when observe() is called without an instruction.
DEFAULT_OBSERVE_INSTRUCTION = (
    "Find the elements on this page a user can act on (links, buttons, inputs, selects, "
    "checkboxes and other controls), each with the most useful action for it."
)

METHODS_GUIDE = """\
Methods and their arguments:
- click: [] (or ["right"] / ["middle"]); double_click, hover: []
- fill: [text] replaces the content of a text field; type: [text] appends key by key
- press: [key], e.g. ["Enter"] or ["Control+A"], sent to the element after focusing it
- select_option: [option label] for a native select (role combobox/listbox with option children)
- check, uncheck: [] for checkboxes, radios and switches
- scroll_into_view: []; scroll_to: ["50%"]; scroll_by: [dx, dy] pixels; next_chunk, prev_chunk: []
- drag_and_drop: [the drop target's id, as in brackets at the start of its outline line]
- set_input_files: [file path, ...] for file inputs"""


class ObservedElement(BaseModel):
    """One element and the action to perform on it."""

    element_id: str = Field(
        description="The element's id exactly as written in brackets at the start of its outline line, without the brackets."
    )
    description: str = Field(
        description="A short description of the element and what the action does, e.g. 'Sign in button: submits the login form'."
    )
    method: ActionMethod = Field(description="The action to perform on the element.")
    arguments: list[str] = Field(
        description="The method's arguments (see the methods list); [] when it takes none. Use %name% placeholders for variables."
    )


class ObserveAnswer(BaseModel):
    """observe()'s structured answer."""

    elements: list[ObservedElement] = Field(
        description="The matching elements, best first; an empty list when nothing on the page fits."
    )


def observe_system(fence: Fence) -> str:
    return (
        "You help a program drive a web browser. You are shown an outline of a web page: one "
        "line per element, '[id] role: name' followed by state such as value=\"...\", [checked] "
        "or [disabled], indented under its parent. Find the elements that match the user's "
        "instruction and, for each, the action that serves it.\n"
        "Rules:\n"
        "- Answer only with ids that appear in the outline; never invent an id or a selector.\n"
        "- Prefer the element that receives the input itself (the textbox, the button, the "
        "link) over its container or its label text.\n"
        "- Leave out disabled elements unless the instruction asks for them.\n"
        "- When the instruction gives no value to fill, type, select or press, leave the arguments "
        "empty ([]) rather than invent one: the user will supply it.\n"
        "- When nothing matches, return an empty list rather than a guess.\n"
        f"{METHODS_GUIDE}\n\n"
        f"{fence_rules(fence)}"
    )


#: The user message: instruction, variables, then the fenced outline (or one part of it).
observe_user = instruction_with_outline
