"""What extract() says to the model, and the words added to the caller's schema.

One model call per page part: the answer carries the data *and* whether the instruction is
now satisfied (``instruction_satisfied``), so a long page is read part by part and the
reading stops as soon as the model says it has everything.
"""

from __future__ import annotations

from .common import Fence, fence_rules

__all__ = [
    "DATA_DESCRIPTION",
    "DEFAULT_EXTRACT_INSTRUCTION",
    "EXTRACTION_DESCRIPTION",
    "SATISFIED_DESCRIPTION",
    "URL_FIELD_DESCRIPTION",
    "extract_system",
    "extract_user",
]

#: Used when extract() gets a schema but no instruction.
DEFAULT_EXTRACT_INSTRUCTION = "Extract the data the schema describes from the page."

#: The description of the one field of the default schema (instruction without schema).
EXTRACTION_DESCRIPTION = "The extracted information, as plain text."

DATA_DESCRIPTION = "The data extracted from the page content shown, in the requested shape."

SATISFIED_DESCRIPTION = (
    "true when the data extracted so far (earlier parts plus this one) fully answers the "
    "instruction, so the rest of the page need not be read; false when more may follow."
)

#: Replaces the description of a URL field: the model names the link, we fill in its URL.
URL_FIELD_DESCRIPTION = (
    "The id of the link element whose URL this is, exactly as written in brackets at the start of "
    "its outline line, without the brackets; the program replaces it with the link's absolute URL."
)


def extract_system(fence: Fence) -> str:
    return (
        "You extract information from a web page. You are shown an outline of the page: one line "
        "per element, '[id] role: name' followed by state such as value=\"...\", indented under "
        "its parent; text appears as 'StaticText' lines. Answer with the requested data, taken "
        "only from the page content: never invent values. Copy text exactly as it appears. Where "
        "the schema asks for a link's URL, give the id of the link element; where a value is "
        "absent from the content shown, leave it empty (empty string, empty list or null as the "
        "schema allows).\n"
        "Long pages are shown in parts, one part per request. Return only the data found in the "
        "part shown; the program merges the parts.\n\n"
        f"{fence_rules(fence)}"
    )


def extract_user(
    instruction: str,
    outline: str,
    fence: Fence,
    *,
    part: tuple[int, int] | None = None,
    earlier: str | None = None,
) -> str:
    where = "" if part is None else f" (part {part[0]} of {part[1]})"
    sections = [f"Instruction: {instruction}"]
    if earlier:
        sections.append(
            "Data already extracted from earlier parts (for deciding instruction_satisfied; do not "
            f"repeat it):\n{fence.wrap(earlier, 'earlier extraction')}"
        )
    sections.append(f"Page content{where}:\n{fence.wrap(outline, 'page outline')}")
    return "\n\n".join(sections)
