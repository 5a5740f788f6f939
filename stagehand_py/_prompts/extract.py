"""What extract() says to the model, and the words added to the caller's schema.

One model call per page part: the answer carries the data *and* whether the instruction is
now satisfied (``instruction_satisfied``), so a long page is read part by part and the
reading stops as soon as the model says it has everything.

Two ways to ask: the plain schema (the model writes the values; :func:`extract_user`) and
choice mode (the model answers each field with one of the page's numbered text lines, and the
program reads the value from it). Choice mode is short on purpose:
the embedded model pays about a second per 45 prompt tokens.
"""

from __future__ import annotations

from .common import NOT_ON_PAGE, Fence, page_section, page_then_task, preamble

__all__ = [
    "DATA_DESCRIPTION",
    "DEFAULT_EXTRACT_INSTRUCTION",
    "EXTRACTION_DESCRIPTION",
    "SATISFIED_DESCRIPTION",
    "NOT_ON_PAGE",
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


#: What extract() asks, after the outline.
EXTRACT_TASK = (
    "Task: answer with the data the instruction and the schema ask for, taken only from the page "
    "outline above: never invent values. Copy text exactly as it appears. Where the schema asks for "
    "a link's URL, give the id of the link element. Where a value is not on the page, say so: null "
    "where the schema allows null, else an empty string or an empty list; never a guess. A long page "
    "is shown one part per request: return only the data found in the part shown; the program merges "
    "the parts."
)


#: What a choice-mode extract asks, after the page's lines: how to answer is in the system prompt
#: (:data:`.common.EXTRACT_LINES_RULES`), the fixed part a local model keeps on disk.
EXTRACT_CHOICE_TASK = "Task: extract the data the instruction asks for from the page lines above (see Extracting from page lines)."


def extract_system(fence: Fence) -> str:
    """The shared preamble (every verb's system prompt is the same; see :mod:`.common`)."""
    return preamble(fence)


def extract_user(
    instruction: str,
    outline: str,
    fence: Fence,
    *,
    part: tuple[int, int] | None = None,
    earlier: str | None = None,
    choice: bool = False,
) -> str:
    """The fenced outline (or one part) first, then what earlier parts gave, the task, the instruction.

    ``choice``: ``outline`` is the page's numbered text lines, answered in choice mode.
    """
    task = [EXTRACT_CHOICE_TASK if choice else EXTRACT_TASK, f"Instruction: {instruction}"]
    if earlier:
        task.insert(0, "Data already extracted from earlier parts (for deciding instruction_satisfied; do not "
                    f"repeat it):\n{fence.wrap(earlier, 'earlier extraction')}")
    return page_then_task(page_section(outline, fence, part, label="page lines" if choice else "page outline"), task)

