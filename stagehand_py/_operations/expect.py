"""expect(): a claim about the page, checked by a model on the page text, with the line that shows it.

The page is read as its outline (no screenshot unless asked), cut to the part most relevant to the
claim, and the model answers a verdict (yes/no) and the evidence: one line of that outline, quoted.
An evidence line the page does not have is re-asked (the client's one bounded loop). In choice
mode the evidence is chosen from the part's lines that say something, numbered, the most
relevant to the claim first (:func:`evidence_choices`), so a small model cannot invent one and
finds the deciding line near the top; a second short request then asks for the verdict on that
line alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .._prompts.common import Fence, page_fence
from .._prompts.expect import (
    NO_LINE,
    VERDICT_SCHEMA,
    evidence_choice,
    expect_schema,
    expect_system,
    expect_user,
    expect_user_short,
    verdict_system,
    verdict_user,
)
from .._session import OperationContext
from .._vision import masked_screenshot
from ..llm import ImagePart, LLMClient, Usage
from ..snapshot import parse_line
from ._budget import pieces
from ._pipeline import ask, read_page, require_sight, split_page
from ._relevance import claim_score, rank_chunks

__all__ = ["Expectation", "claim_verdict", "evidence_choices", "expect"]

#: Most lines offered as evidence choices in choice mode: the part's lines most relevant to the
#: claim first (a small model picks among few far better than among a page's every line).
MAX_CHOICES = 20
#: Lines of the page a short verdict (:func:`claim_verdict` in choice mode) shows: the request
#: is the claim and these lines, nothing else.
SHORT_CHOICES = 12


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


def evidence_choices(lines: list[str], claim: str, *, limit: int = MAX_CHOICES) -> dict[str, str]:
    """Choice mode's evidence choices -> the outline line each stands for: the lines that say
    something (a name or a value), most relevant to ``claim`` first, text before controls on a
    tie ("Cart: 2 items" before the "Add to cart" button), page order after that; at most
    ``limit``, each once, numbered."""
    said: dict[str, tuple[str, float, bool, int]] = {}
    for index, line in enumerate(lines):
        element = parse_line(line)
        if element is None or not (element.name or element.value):
            continue
        value = "" if element.value is None else f' value="{element.value}"'
        shown = (f"{element.role}: {element.name}" if element.name else element.role) + value + "".join(
            f" [{flag}]" for flag in element.flags)
        if shown not in said:
            said[shown] = (line, claim_score(shown, claim), element.actionable, index)
    ranked = sorted(said.items(), key=lambda item: (-item[1][1], item[1][2], item[1][3]))[:limit]
    return {evidence_choice(n, shown): line for n, (shown, (line, *_)) in enumerate(ranked, start=1)}


async def expect(ctx: OperationContext, claim: str, *, screenshot: bool = False) -> Expectation:
    client = ctx.model()
    if screenshot:
        require_sight(client, "expect(screenshot=True)")
    page = await read_page(ctx)
    choice = client.choice_mode

    def prompt(fence: Fence, outline: str, part: tuple[int, int] | None) -> tuple[str, str]:
        sample = [evidence_choice(n, "StaticText: " + "x" * 60) for n in range(1, MAX_CHOICES + 1)] if choice else None
        return expect_system(fence), expect_user(claim, outline, fence, part=part, choices=sample)

    parts = split_page(ctx, page.text, prompt, expect_schema(None), rank_by=claim, choice=choice)
    chunk = parts.chunks[0] if parts.chunks else None
    text = chunk.text if chunk is not None else ""
    images: list[ImagePart] = []
    if screenshot:  # secrets masked like every screenshot a model sees
        images.append(ImagePart(data=await masked_screenshot(ctx.page, ctx.variables, type="png")))
    return await _verdict(client, claim, text, page_fence(ctx.page, text), url=ctx.page.url,
                          part=parts.part(chunk) if chunk is not None else None, images=images,
                          secrets=ctx.variables.secret_values(), short=False, purpose="expect")


async def claim_verdict(client: LLMClient, claim: str, outline: str, *, url: str, budget: int,
                        secrets: Sequence[str], purpose: str = "expect") -> Expectation:
    """``expect``'s verdict on ``outline`` (a page the caller read, redacted), in one request: the
    agent's check of a finished run. The outline part most relevant to the claim within
    ``budget`` tokens, the evidence quoted from it; in choice mode (a small model) one short
    request: the claim and the :data:`SHORT_CHOICES` lines most relevant to it, the evidence
    chosen among them with the verdict."""
    ranked = rank_chunks(pieces(outline, budget), claim)
    text = ranked[0].text if ranked else ""
    part = (1, len(ranked)) if len(ranked) > 1 else None
    return await _verdict(client, claim, text, Fence(), url=url, part=part, images=[], secrets=secrets, short=True,
                          purpose=purpose)


async def _verdict(client: LLMClient, claim: str, text: str, fence: Fence, *, url: str, part: tuple[int, int] | None,
                   images: Sequence[ImagePart], secrets: Sequence[str], short: bool, purpose: str) -> Expectation:
    """The verdict on ``claim`` from ``text`` (one part of a page's outline). Choice mode: the
    evidence is chosen among numbered lines; ``short`` shows only those lines and takes the
    verdict from the same answer, else a second request asks for it on the chosen line alone."""
    lines = _lines(text)
    choices = evidence_choices(lines, claim, limit=SHORT_CHOICES if short else MAX_CHOICES) if client.choice_mode else None
    system = expect_system(fence)
    if choices is not None and short:
        user = expect_user_short(claim, list(choices), fence)
    else:
        user = expect_user(claim, text, fence, part=part, choices=list(choices) if choices is not None else None)

    def check(out: dict[str, Any]) -> tuple[list[str], tuple[str, str]]:
        evidence = str(out.get("evidence", "")).strip()
        if evidence == NO_LINE:
            return [], (str(out.get("verdict")), "")
        if choices is not None and evidence in choices:
            return [], (str(out.get("verdict")), choices[evidence])
        if not any(_same(evidence, line) or _same(evidence, line.split("] ", 1)[-1]) for line in lines):
            return [f"evidence {evidence[:120]!r} is not a line of the page outline; quote one line exactly, or "
                    f"answer {NO_LINE!r} with verdict 'no'."], ("no", "")
        return [], (str(out.get("verdict")), evidence)

    before = client.metrics.total
    verdict, evidence = await ask(client, system, user, expect_schema(list(choices) if choices is not None else None),
                                  purpose=purpose, secrets=secrets, check=check, images=images)
    if choices is not None and evidence and not short:
        # Choice mode (a small model): the line it chose, asked about alone, decides the verdict;
        # read with the whole page it answers 'yes' to a claim its own evidence contradicts.
        line = evidence.split("] ", 1)[-1]
        verdict = await ask(client, verdict_system(fence), verdict_user(claim, line, fence), VERDICT_SCHEMA,
                            purpose=purpose, secrets=secrets, check=lambda out: ([], str(out.get("verdict"))))
    return Expectation(claim=claim, passed=verdict == "yes", verdict="yes" if verdict == "yes" else "no",
                       evidence=evidence, url=url, usage=client.metrics.total - before)
