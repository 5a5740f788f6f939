"""What observe()/act() say to a model in choice mode, and the shape of its answer.

In choice mode the model does not write an element id: it picks lines from a list of the
page's actionable elements, each written ``"<role>: <name> [<id>]"`` (e.g.
``"button: Log in [0-11]"``), and the JSON Schema makes that list an enum, so a constrained
decoder (llama.cpp's grammar, OpenAI's strict schemas) cannot produce anything else. The
operation maps the chosen line back to its id. Small models pick far more reliably than they
copy ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, get_args

from .._types import ActionMethod
from .common import NO_CHOICE, Fence, reuse_layout

__all__ = ["CHOICE_METHODS", "MAX_CHOSEN", "NO_CHOICE", "TEXT_METHODS", "choice_enum", "choice_line",
           "choice_schema", "enum_safe", "with_choices"]

#: The methods a choice-mode answer may name (all of them; the enum keeps spellings exact).
CHOICE_METHODS: tuple[str, ...] = get_args(ActionMethod)
#: Methods that put text into an element: they may name only an element that takes text.
TEXT_METHODS: tuple[str, ...] = ("fill", "type")

_NAME_MAX = 80
#: At most this many elements in one observe() answer in choice mode: a small model under a
#: grammar can otherwise keep listing choices until it runs out of tokens (invalid JSON).
MAX_CHOSEN = 10
#: Characters a choice never contains: llama.cpp's JSON-schema grammar mishandles escaped
#: quotes and backslashes inside enum strings (a quote segfaults it in llama-cpp-python 0.3.36).
_UNSAFE = str.maketrans({'"': "'", "\\": "/", **{chr(c): " " for c in range(32)}})


def enum_safe(text: str) -> str:
    """``text`` on one line without the characters a grammar's enum string cannot hold."""
    return " ".join(text.translate(_UNSAFE).split())


def choice_line(role: str, name: str, element_id: str, *, details: str = "") -> str:
    """One choice: ``"button: Log in [0-11]"``; an unnamed element shows its ``details``
    instead (``'textbox value="x" [0-7]'``) or just its role (``"textbox [0-7]"``)."""
    text = enum_safe(name or details)
    if len(text) > _NAME_MAX:
        text = text[: _NAME_MAX - 1].rstrip() + "…"
    if not text:
        return f"{role} [{element_id}]"
    return f"{role}: {text} [{element_id}]" if name else f"{role} {text} [{element_id}]"


def with_choices(user: str, choices: Sequence[str], fence: Fence) -> str:
    """``user`` with the fenced choices (page text); how to answer with them is in the system
    prompt (:data:`.common.CHOICE_RULES`), the fixed part a local model keeps on disk.

    Laid out for reuse, they go right after the page's outline (the first fenced block: observe
    and the act that follows offer the same choices on a small page, so they share them too);
    otherwise at the end.
    """
    listed = f"Choices:\n{fence.wrap(chr(10).join(choices), 'choices: page elements')}"
    end = user.find(fence.closing)
    if not reuse_layout() or end < 0:
        return f"{user}\n\n{listed}"
    end += len(fence.closing)
    return f"{user[:end]}\n\n{listed}{user[end:]}"


def choice_schema(choices: Sequence[str], *, single: bool, opens_options: bool,
                  text_choices: Sequence[str] | None = None) -> dict[str, Any]:
    """The answer schema: ``{"elements": [{"method": ..., "element": <choice>, "arguments": [...]}]}``
    (``single``: at most one element; ``opens_options``: act()'s dropdown flag too).

    ``text_choices``: the choices that take typed text. Then the method comes first and
    ``fill``/``type`` may only name one of those (or :data:`NO_CHOICE`): a constrained decoder
    cannot type into a link, and a model that means to type is offered only the fields, not made to
    click what it picked (which an element-first order would do)."""
    def item(methods: Sequence[str], elements: Sequence[str]) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "method": {"type": "string", "enum": list(methods), "description": "The action to perform."},
                "element": {"type": "string", "enum": list(elements), "description": "One of the choices, copied exactly."},
                "arguments": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "The method's arguments; [] when it takes none. Use %name% placeholders for variables.",
                },
            },
            "required": ["method", "element", "arguments"],
            "additionalProperties": False,
        }

    if text_choices is None:
        items = item(CHOICE_METHODS, choices)
    else:
        fields = [c for c in choices if c in set(text_choices) or c == NO_CHOICE]
        items = {"anyOf": [item(TEXT_METHODS, fields), item([m for m in CHOICE_METHODS if m not in TEXT_METHODS], choices)]}
    elements: dict[str, Any] = {
        "type": "array",
        "items": items,
        "description": f"The chosen elements, best first; only '{NO_CHOICE}' when none fits.",
    }
    elements["maxItems"] = 1 if single else min(MAX_CHOSEN, len(choices))
    elements["minItems"] = 1
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"elements": elements},
        "required": ["elements"],
        "additionalProperties": False,
    }
    if opens_options:
        schema["properties"]["opens_options"] = {
            "type": "boolean",
            "description": (
                "True only when the chosen action is a click that opens a custom dropdown, menu or listbox "
                "(not a native select) whose option must be chosen next."
            ),
        }
        schema["required"].append("opens_options")
    return schema


def choice_enum(schema: dict[str, Any]) -> list[str]:
    """Every choice line a :func:`choice_schema` offers, in order (for tests and tools reading it)."""
    items = schema["properties"]["elements"]["items"]
    return max((list(shape["properties"]["element"]["enum"]) for shape in items.get("anyOf", [items])), key=len)
