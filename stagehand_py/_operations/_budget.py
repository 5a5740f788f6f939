"""Token budgeting for page text: what one request may carry, and the outline cut to fit it.

The budget bounds the whole prompt, re-asks included: every request keeps a reserve for the
model's answer echoed back on a re-ask and the re-ask message itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from .._errors import ConfigurationError
from .._prompts.llm import prompted_json_instructions
from ..llm._structured import OutputSpec
from ..snapshot import OutlineChunk, estimate_tokens, split_outline

__all__ = ["chunk_budget", "pieces", "prompt_tokens", "reask_reserve"]

_REASK_RESERVE_MIN = 300


def prompt_tokens(texts: Sequence[str], output: type[BaseModel] | dict[str, Any] | None) -> int:
    """Estimated prompt tokens of a request: its messages' texts plus the schema as sent (worst mode)."""
    text = "\n".join(texts)
    spec = OutputSpec.from_output(output)
    if spec.wire_schema is not None:
        text += prompted_json_instructions(spec.wire_schema)
    return estimate_tokens(text)


def reask_reserve(token_budget: int) -> int:
    """Tokens every request keeps free for re-asks."""
    return max(_REASK_RESERVE_MIN, token_budget // 10)


def chunk_budget(token_budget: int, overhead: Sequence[str], output: Any, *, extra_reserve: int = 0,
                 choice: bool = False) -> int:
    """Tokens left for page content once the fixed text (``overhead``: the request's message texts
    without the page), schema and re-ask reserve are counted.

    ``choice``: the client is in choice mode, where the chunk's actionable lines are repeated
    as choices (in the message and in the schema), so the chunk gets a third of what is left.
    """
    fixed = prompt_tokens(overhead, output)
    left = token_budget - fixed - reask_reserve(token_budget) - extra_reserve
    if choice:
        left //= 3
    if left < 200:
        raise ConfigurationError(
            f"token_budget={token_budget} leaves {left} tokens for page content after the prompt and schema "
            f"({fixed} tokens) and the re-ask reserve; raise token_budget (e.g. 16000) or simplify the schema."
        )
    return left


#: Share of a chunk's budget kept to finish the group its last line belongs to.
_GROUP_SLACK = 0.1


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def pieces(outline: str, budget: int) -> list[OutlineChunk]:
    """The outline as one piece when it fits, else its chunks (page order).

    A chunk that ends inside a group (a table row's cells, a list item's parts) also carries the
    rest of that group, the following lines as deep as its last line, within the budget: a row
    cut between its label and its value would be answerable from neither part.
    """
    tokens = estimate_tokens(outline)
    if tokens <= budget:
        return [OutlineChunk(0, outline, tokens, 0, outline.count("\n"), 0)]
    lines = outline.split("\n")
    room = int(budget * _GROUP_SLACK)
    chunks = split_outline(outline, budget - room)
    finished = []
    for chunk in chunks:
        text, last = chunk.text, chunk.last_line
        depth = _indent(lines[last])
        while last + 1 < len(lines) and _indent(lines[last + 1]) >= depth > 0:
            longer = f"{text}\n{lines[last + 1]}"
            if estimate_tokens(longer) > budget:
                break
            text, last = longer, last + 1
        finished.append(OutlineChunk(chunk.index, text, estimate_tokens(text), chunk.first_line, last,
                                     chunk.context_lines))
    return finished
