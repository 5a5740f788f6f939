"""Every word the model reads for ``expect()``: is a claim about the page true, and which line shows it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .common import Fence, fence_rules

__all__ = ["NO_LINE", "expect_schema", "expect_system", "expect_user"]

#: The evidence a model gives when no line of the page bears on the claim.
NO_LINE = "(no line of the page shows it)"


def expect_system(fence: Fence) -> str:
    return (
        "You check a claim about a web page for a test. You are shown the page as an outline: one line per "
        "element, '[id] role: name' and its state. Decide whether the page shows the claim is true ('yes') or "
        "not ('no'): first quote as evidence the one line of the outline that decides it, exactly as written, "
        "then give the verdict that line supports. "
        f"When no line bears on the claim, the verdict is 'no' and the evidence is {NO_LINE!r}.\n\n"
        + fence_rules(fence)
    )


def expect_user(claim: str, outline: str, fence: Fence, *, part: tuple[int, int] | None = None) -> str:
    where = "" if part is None else f" (part {part[0]} of {part[1]} of a long page: the most relevant one)"
    return f"Claim: {claim}\n\nPage outline{where}:\n{fence.wrap(outline, 'page outline')}"


def expect_schema(lines: Sequence[str] | None) -> dict[str, Any]:
    """The answer: a verdict and the evidence line; with ``lines`` (choice mode, a small model) the
    evidence is one of them, so the answer is a choice, never free text."""
    evidence: dict[str, Any] = {"type": "string", "description": "The outline line that decides it, quoted exactly"}
    if lines is not None:
        evidence = {"type": "string", "enum": [*lines, NO_LINE], "description": "The outline line that decides it"}
    return {
        "type": "object",
        # The evidence first: a small model reads the line it chose before it commits to a verdict.
        "properties": {"evidence": evidence, "verdict": {"type": "string", "enum": ["yes", "no"]}},
        "required": ["evidence", "verdict"],
        "additionalProperties": False,
    }
