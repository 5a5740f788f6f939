"""The judge: a yes / no / invalid verdict on a question about the page, from a screenshot and
the outline. Backs :meth:`Stagehand.evaluate` (the agent's ``self_check`` is ``expect``'s verdict:
:mod:`._verify`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from .._errors import InvalidArgumentError, StagehandError
from .._prompts.agent import judge_messages
from .._prompts.common import Fence
from .._secrets import VariableSet
from .._vision import masked_screenshot
from ..llm import ImagePart, LLMClient, SystemMessage, TextPart, UserMessage
from ._types import Driver, EvaluateResult

__all__ = ["evaluate_page"]


class _Verdict(BaseModel):
    verdict: Literal["yes", "no", "invalid"] = Field(description="yes or no; invalid when the page cannot answer it")
    reasoning: str = Field(description="Short reasoning citing what is on the page")


async def evaluate_page(
    driver: Driver,
    client: LLMClient,
    question: str,
    *,
    screenshot: bool = True,
    max_outline_tokens: int = 6000,
    variables: VariableSet | None = None,
) -> EvaluateResult:
    """The judge's verdict. A value ``variables`` hides is redacted from the outline and the fields
    holding one are masked in the screenshot."""
    if not isinstance(question, str) or not question.strip():
        raise InvalidArgumentError("evaluate() needs a non-empty question.")
    outline: str | None
    try:
        snapshot = await driver.snapshot()
        chunks = snapshot.chunks(max_outline_tokens)
        outline = chunks[0].text if chunks else snapshot.tree
        outline = variables.redact(outline) if variables is not None else outline
    except StagehandError:
        if not screenshot:
            raise
        outline = None
    image = await masked_screenshot(driver.page, variables, type="png") if screenshot else None
    fence = Fence()
    system, user = judge_messages(question, driver.page.url, outline, fence, has_screenshot=image is not None)
    parts: list[TextPart | ImagePart] = [TextPart(text=user)]
    if image is not None:
        parts.append(ImagePart(data=image, media_type="image/png"))
    result = await client.generate([SystemMessage(system), UserMessage(parts)], purpose="judge", output=_Verdict)
    return EvaluateResult(verdict=result.output.verdict, reasoning=result.output.reasoning, usage=result.usage)
