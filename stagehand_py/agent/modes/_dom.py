"""The DOM mode: the page's outline in, element-id tool calls out (through structured output)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..._errors import StagehandError
from ..._prompts import agent as P
from ..._prompts.common import Fence
from ..._vision import masked_screenshot
from .._run import PageState, Run
from .._step import structured_step
from .._tools import Tool, ToolSet, builtin_tools
from .._types import AgentMode
from ..hygiene import page_signature

__all__ = ["DomMode"]


class DomMode:
    """The DOM mode: the outline in, element-id tool calls out."""

    name: AgentMode = "dom"

    def __init__(self, *, max_outline_tokens: int, use_vision: bool) -> None:
        self.max_outline_tokens = max_outline_tokens
        self.use_vision = use_vision

    def tools(self, output_schema: dict[str, Any] | None) -> list[Tool]:
        return builtin_tools(output_schema)

    def system_prompt(self, run: Run, fence: Fence, offered: Sequence[Tool]) -> str:
        return P.agent_system_prompt(
            fence, [(t.name, t.description) for t in offered], extra=run.config.system_prompt,
            output_schema=run.output_schema,
        )

    def extra_step_fields(self) -> dict[str, Any]:
        return {}

    async def step(self, run: Run, toolset: ToolSet, state: PageState, notices: list[str], fence: Fence) -> None:
        await structured_step(run, self, toolset, state, notices, fence)

    async def capture(self, run: Run) -> PageState:
        page = run.driver.page
        url = page.url
        try:
            title = await page.title()
        except Exception:  # navigating, closed: the outline capture will say more
            title = ""
        try:
            snapshot = await run.driver.snapshot()
            run.snapshot = snapshot
            tree = run.redact(snapshot.tree)
            chunks = [run.redact(c.text) for c in snapshot.chunks(self.max_outline_tokens)] or [tree]
        except StagehandError as exc:
            run.snapshot = None
            tree = f"(the page could not be captured: {type(exc).__name__}: {run.redact(str(exc))})"
            chunks = [tree]
        run.outline_chunks = chunks
        images = []
        if self.use_vision:
            images.append(await masked_screenshot(page, run.variables, type="png"))
        return PageState(
            url=url, title=title, signature=page_signature(url, tree), outline=chunks[0],
            outline_part=(1, len(chunks)), images=images, tabs=len(page.context.pages),
        )
