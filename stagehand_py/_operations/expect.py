"""expect(): a claim about the page, checked by a model on the page text, with the line that shows it.

The page is read as its outline (no screenshot unless asked), cut to the part most relevant to the
claim, and the model answers a verdict (yes/no) and the evidence: one line of that outline, quoted.
An evidence line the page does not have is re-asked (the client's one bounded loop); in choice
mode the evidence is chosen from the part's lines, so a small model cannot invent one.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .._prompts.common import Fence
from .._prompts.expect import NO_LINE, expect_schema, expect_system, expect_user
from .._vision import masked_screenshot
from ..llm import ImagePart, Usage
from ._context import OperationContext
from ._pipeline import ask, read_page, split_page
from ._vision import require_sight

__all__ = ["Expectation", "expect"]

#: Most lines offered as choices in choice mode (the most relevant part's first lines).
MAX_CHOICES = 200


class Expectation(BaseModel):
    """``expect()``'s verdict: ``passed`` and the ``evidence`` line of the page it read. Truthy when passed."""

    model_config = ConfigDict(frozen=True)

    claim: str
    passed: bool
    verdict: Literal["yes", "no"]
    #: The outline line that decides it, as the page shows it (secrets as ``%name%``); empty
    #: when no line bears on the claim.
    evidence: str = ""
    url: str = ""
    usage: Usage = Field(default_factory=Usage)

    def __bool__(self) -> bool:
        return self.passed

    def explain(self) -> str:
        shown = f"the page shows: {self.evidence!r}" if self.evidence else "no line of the page shows it"
        return f"expected {self.claim!r} on {self.url}: {'yes' if self.passed else 'no'}; {shown}"


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.split("\n") if line.strip()]


def _same(a: str, b: str) -> bool:
    return re.sub(r"\s+", " ", a).strip() == re.sub(r"\s+", " ", b).strip()


async def expect(ctx: OperationContext, claim: str, *, screenshot: bool = False) -> Expectation:
    client = ctx.model()
    if screenshot:
        require_sight(client, "expect(screenshot=True)")
    page = await read_page(ctx)

    def prompt(fence: Fence, outline: str, part: tuple[int, int] | None) -> tuple[str, str]:
        return expect_system(fence), expect_user(claim, outline, fence, part=part)

    choice = client.choice_mode
    parts = split_page(ctx, page.text, prompt, expect_schema(None), rank_by=claim, choice=choice)
    chunk = parts.chunks[0] if parts.chunks else None
    text = chunk.text if chunk is not None else ""
    lines = _lines(text)
    fence = Fence()
    system, user = prompt(fence, text, parts.part(chunk) if chunk is not None else None)
    images: list[ImagePart] = []
    if screenshot:  # secrets masked like every screenshot a model sees
        images.append(ImagePart(data=await masked_screenshot(ctx.page, ctx.variables, type="png")))

    def check(out: dict[str, Any]) -> tuple[list[str], tuple[str, str]]:
        evidence = str(out.get("evidence", "")).strip()
        if evidence != NO_LINE and not any(_same(evidence, line) or _same(evidence, line.split("] ", 1)[-1])
                                           for line in lines):
            return [f"evidence {evidence[:120]!r} is not a line of the page outline; quote one line exactly, or "
                    f"answer {NO_LINE!r} with verdict 'no'."], ("no", "")
        return [], (str(out.get("verdict")), "" if evidence == NO_LINE else evidence)

    before = client.metrics.total
    verdict, evidence = await ask(client, system, user, expect_schema(lines[:MAX_CHOICES] if choice else None),
                                  purpose="expect", secrets=ctx.variables.secret_values(), check=check, images=images)
    return Expectation(claim=claim, passed=verdict == "yes", verdict="yes" if verdict == "yes" else "no",
                       evidence=evidence, url=ctx.page.url, usage=client.metrics.total - before)
