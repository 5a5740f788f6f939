"""Every word the model reads for ``expect()``: is a claim about the page true, and which line shows it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .choice import enum_safe
from .common import Fence, fence_rules

__all__ = ["NO_LINE", "VERDICT_SCHEMA", "evidence_choice", "expect_schema", "expect_system", "expect_user",
           "expect_user_short", "verdict_system", "verdict_user"]

#: The evidence a model gives when no line of the page bears on the claim.
NO_LINE = "(no line of the page shows it)"


def expect_system(fence: Fence) -> str:
    return (
        "You check a claim about a web page for a test. You are shown the page as an outline: one line per "
        "element, '[id] role: name' and its state. Decide whether the page shows the claim is true ('yes') or "
        "not ('no'): first give as evidence the one line of the outline that decides it, then the verdict that "
        f"line supports. When no line bears on the claim, the verdict is 'no' and the evidence is {NO_LINE!r}.\n\n"
        + fence_rules(fence)
    )


def evidence_choice(number: int, line: str) -> str:
    """One evidence choice: ``"2. StaticText: Cart: 2 items"`` (the line without its id, numbered;
    no quote or backslash, which llama.cpp's grammar mishandles inside an enum string)."""
    return f"{number}. {enum_safe(line)}"


def expect_user(claim: str, outline: str, fence: Fence, *, part: tuple[int, int] | None = None,
                choices: Sequence[str] | None = None) -> str:
    """The claim and the outline; with ``choices`` (choice mode: numbered lines, most relevant
    first) the evidence is one of them, chosen, never quoted."""
    where = "" if part is None else f" (part {part[0]} of {part[1]} of a long page: the most relevant one)"
    text = f"Claim: {claim}\n\nPage outline{where}:\n{fence.wrap(outline, 'page outline')}"
    if choices is None:
        return text + "\n\nQuote the evidence line exactly as the outline writes it."
    listed = fence.wrap("\n".join(choices), "choices: lines of the page")
    return (f"{text}\n\nLines of the page that may decide the claim, the most relevant first:\n{listed}\n\n"
            f"Choose the evidence from these lines, copied with its number; only when none bears on the claim, "
            f"choose {NO_LINE!r}. Then the verdict: 'yes' only when that line shows the claim is true.")


def expect_user_short(claim: str, choices: Sequence[str], fence: Fence) -> str:
    """A short verdict's one request (a small model): the claim and the page's lines most relevant
    to it, numbered; the evidence is one of them, then the verdict."""
    listed = fence.wrap("\n".join(choices), "lines of the page")
    return (f"Claim: {claim}\n\nThe lines of the page most relevant to the claim:\n{listed}\n\n"
            f"Choose the line that decides the claim, copied with its number (only when none bears on it, "
            f"{NO_LINE!r}). Then the verdict: 'yes' only when that line shows the claim is true.")


def expect_schema(choices: Sequence[str] | None) -> dict[str, Any]:
    """The answer: the evidence line and a verdict; with ``choices`` (choice mode, a small model)
    the evidence is one of them, so the answer is a choice, never free text."""
    evidence: dict[str, Any] = {"type": "string", "description": "The outline line that decides it, quoted exactly"}
    if choices is not None:
        evidence = {"type": "string", "enum": [*choices, NO_LINE], "description": "The line that decides it"}
    return {
        "type": "object",
        # The evidence first: a small model reads the line it chose before it commits to a verdict.
        "properties": {"evidence": evidence, "verdict": {"type": "string", "enum": ["yes", "no"]}},
        "required": ["evidence", "verdict"],
        "additionalProperties": False,
    }


def verdict_system(fence: Fence) -> str:
    return (
        "You check one claim against one line of a web page. Answer 'yes' only when the line shows the claim "
        "is true; answer 'no' when the line shows something else or contradicts it.\n\n" + fence_rules(fence)
    )


def verdict_user(claim: str, line: str, fence: Fence) -> str:
    """Choice mode's second question: the claim against the one line chosen as evidence (a small
    model that picks the right line still tends to say 'yes' when it reads the whole page)."""
    return f"Claim: {claim}\nLine of the page:\n{fence.wrap(line, 'page line')}\n\nDoes this line show that the claim is true?"


#: The answer to :func:`verdict_user`.
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["verdict"],
    "additionalProperties": False,
}
