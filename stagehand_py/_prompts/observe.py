"""What observe() says to the model, and the shape of its answer.

The model reads an outline of the page (one line per element, ``[id] role: name ...``) and
answers with element ids; the operation maps ids back to XPaths, so the model never writes
a selector.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, Field, PrivateAttr

from .._types import ActionMethod
from .common import METHODS_GUIDE, Fence, instruction_with_outline, preamble

__all__ = [
    "DEFAULT_OBSERVE_INSTRUCTION",
    "METHODS_GUIDE",
    "ElementAnswer",
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


class ElementAnswer(BaseModel):
    """An answer that names elements (observe's, act's). In choice mode it also knows the choices it
    was picked from (:attr:`offered`), so that a re-ask can list the valid ones exactly as offered."""

    elements: list[ObservedElement]
    _offered: dict[str, str] | None = PrivateAttr(default=None)

    @property
    def offered(self) -> dict[str, str] | None:
        """Element id -> its choice line, in choice mode; None when the model wrote ids."""
        return self._offered

    def picked_from(self, offered: dict[str, str]) -> None:
        """Note the choices (id -> line) this answer was picked from."""
        self._offered = dict(offered)


class ObserveAnswer(ElementAnswer):
    """observe()'s structured answer."""

    elements: list[ObservedElement] = Field(
        description="The matching elements, best first; an empty list when nothing on the page fits."
    )


#: observe()'s closing line, after the instruction (the task is :data:`.common.ELEMENT_TASK`).
OBSERVE_ANSWER = "Answer: every element that fits, best first."


def observe_system(fence: Fence) -> str:
    """The shared preamble (every verb's system prompt is the same; see :mod:`.common`)."""
    return preamble(fence)


def observe_user(instruction: str, outline: str, fence: Fence, *, variables: Mapping[str, str],
                 part: tuple[int, int] | None = None) -> str:
    """The user message: the fenced outline (or one part), then the task, instruction, variables and answer line."""
    return instruction_with_outline(instruction, outline, fence, variables=variables, part=part, answer=OBSERVE_ANSWER)
