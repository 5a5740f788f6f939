"""Every word the LLM layer itself adds to a conversation.

The re-ask message, the prompted-JSON instructions and the tool description are all here,
so a reviewer can read everything the model is told by the plumbing in one sitting.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "OUTPUT_TOOL_DESCRIPTION",
    "prompted_json_instructions",
    "reask_message",
    "not_a_choice",
]

#: Description of the one tool a ``tools``-mode request forces the model to call.
OUTPUT_TOOL_DESCRIPTION = (
    "Return your answer by calling this tool. Its arguments are the answer; fill every "
    "required field and follow the field descriptions."
)


def prompted_json_instructions(schema: dict[str, Any]) -> str:
    """Appended to the system prompt when the server supports no structured-output mode."""
    return (
        "Answer with one JSON object and nothing else: no prose before or after it, no "
        "Markdown code fences. The object must be valid against this JSON Schema:\n"
        f"{json.dumps(schema, indent=2, sort_keys=True)}"
    )


def reask_message(errors: list[str]) -> str:
    """Sent after an answer that did not validate, so the model can correct itself."""
    listed = "\n".join(f"- {e}" for e in errors)
    return (
        "Your previous answer was not valid for the required output format. Problems found:\n"
        f"{listed}\n"
        "Answer again with the complete, corrected output. Keep what was right; fix only "
        "what is listed."
    )



def not_a_choice(value: object, choices: int) -> str:
    """A validation problem: the answer is not one of a long list of allowed values."""
    return (
        f"{value!r} is not one of the {choices} allowed values; copy one of the listed choices "
        "exactly, character for character"
    )
