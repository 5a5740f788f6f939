"""The computer-use mode of the loop: a scaled screenshot in, coordinate actions out."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ...._actions import placeholders_in, substitute
from ...._errors import SecretPlacementError
from ...._prompts.agent import cua_system_prompt
from ...._prompts.common import Fence
from ...._secrets import VariableSet
from ...._vision import masked_screenshot
from ..._run import PageState, Run
from ..._step import structured_step
from ..._tools import (
    FailArgs,
    GotoArgs,
    SaveProgressArgs,
    Tool,
    ToolOutcome,
    ToolSet,
    done_args_model,
)
from ..._types import AgentMode
from ...hygiene import page_signature
from ._actions import (
    ClickArgs,
    DragArgs,
    KeypressArgs,
    PointArgs,
    ScreenGeometry,
    ScrollArgs,
    TypeArgs,
    WaitMsArgs,
    png_size,
)
from ._native import NativeComputerUse, NativeProvider

__all__ = ["CuaMode"]


class _SafetyCheckItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str = Field(description="A short name, e.g. 'payment' or 'delete_data'")
    message: str = Field(description="What looks risky and why")


class CuaMode:
    name: AgentMode = "cua"

    def __init__(self, *, screen: tuple[int, int], native: NativeProvider | None = None) -> None:
        self.target = screen
        self.geometry: ScreenGeometry | None = None
        #: With a provider's own computer tool, each step goes through it (after the capture);
        #: ``None``: the internal protocol through structured output (test doubles).
        self.native = NativeComputerUse(native, self) if native is not None else None

    async def step(self, run: Run, toolset: ToolSet, state: PageState, notices: list[str], fence: Fence) -> None:
        if self.native is not None:
            await self.native.step(run, toolset, state, notices)
        else:
            await structured_step(run, self, toolset, state, notices, fence)

    def extra_step_fields(self) -> dict[str, Any]:
        return {"safety_checks": (list[_SafetyCheckItem], Field(default_factory=list))}

    def system_prompt(self, run: Run, fence: Fence, offered: Sequence[Tool]) -> str:
        g = self.geometry
        width, height = (g.screen_width, g.screen_height) if g else self.target
        return cua_system_prompt(fence, width=width, height=height, extra=run.config.system_prompt)

    async def _shot(self, page: Any, variables: VariableSet) -> bytes:
        viewport = page.viewport_size or await page.evaluate("() => ({width: innerWidth, height: innerHeight})")
        vw, vh = int(viewport["width"]), int(viewport["height"])
        scale = ScreenGeometry.fit((vw, vh), self.target)
        if scale >= 1.0 or variables:  # a secret field is masked by Playwright, then the image shrunk
            data: bytes = await masked_screenshot(page, variables, type="png", scale="css", downscale=scale)
        else:
            # Page.captureScreenshot scales the clip itself: no image library needed.
            import base64

            cdp = await page.context.new_cdp_session(page)
            # No detach when the capture failed: on a crashed tab it never returns (the session
            # goes with the tab).
            shot = await cdp.send("Page.captureScreenshot", {
                "format": "png",
                "clip": {"x": 0, "y": 0, "width": vw, "height": vh, "scale": scale},
                "captureBeyondViewport": False,
            })
            await cdp.detach()
            data = base64.b64decode(str(shot["data"]))
        sw, sh = png_size(data)
        self.geometry = ScreenGeometry(vw, vh, sw, sh)
        return data

    async def capture(self, run: Run) -> PageState:
        page = run.driver.page
        data = await self._shot(page, run.variables)
        run.record_screenshot(data)
        try:
            title = await page.title()
        except Exception:  # navigating
            title = ""
        return PageState(
            url=page.url, title=title, signature=page_signature(page.url, hashlib.sha256(data).hexdigest()),
            images=[data], tabs=len(page.context.pages),
        )

    # --- tools -------------------------------------------------------------------------------

    def _point(self, x: int, y: int) -> tuple[float, float]:
        assert self.geometry is not None, "capture() runs before any action"
        return self.geometry.to_viewport(x, y)

    def tools(self, output_schema: dict[str, Any] | None) -> list[Tool]:
        mode = self

        async def click(run: Run, a: ClickArgs) -> ToolOutcome:
            x, y = mode._point(a.x, a.y)
            await run.driver.page.mouse.click(x, y, button=a.button)
            return ToolOutcome(ok=True, text=f"{a.button} click at ({a.x}, {a.y})")

        async def double_click(run: Run, a: PointArgs) -> ToolOutcome:
            x, y = mode._point(a.x, a.y)
            await run.driver.page.mouse.dblclick(x, y)
            return ToolOutcome(ok=True, text=f"double click at ({a.x}, {a.y})")

        async def move(run: Run, a: PointArgs) -> ToolOutcome:
            x, y = mode._point(a.x, a.y)
            await run.driver.page.mouse.move(x, y)
            return ToolOutcome(ok=True, text=f"mouse at ({a.x}, {a.y})")

        async def type_(run: Run, a: TypeArgs) -> ToolOutcome:
            bound = [name for name in placeholders_in([a.text]) if run.variables.placement(name) is not None]
            if bound:  # keys go to whatever has the focus: where they land cannot be checked first
                raise SecretPlacementError(
                    f"%{bound[0]}% is bound to origins or a field, and typing by coordinates cannot check where the keys "
                    "land, so nothing was typed. Use a DOM agent (mode='dom'), whose act checks the field first.",
                    variable=bound[0], method="type")
            (text,) = substitute([a.text], run.variables) if run.variables else (a.text,)
            await run.driver.page.keyboard.type(text)
            return ToolOutcome(ok=True, text=f"typed {a.text!r}")  # the placeholder form, never the value

        async def keypress(run: Run, a: KeypressArgs) -> ToolOutcome:
            from ._actions import normalise_key

            await run.driver.page.keyboard.press("+".join(normalise_key(k) for k in a.keys))
            return ToolOutcome(ok=True, text=f"pressed {'+'.join(a.keys)}")

        async def scroll(run: Run, a: ScrollArgs) -> ToolOutcome:
            assert mode.geometry is not None
            x, y = mode._point(a.x, a.y)
            dx, dy = mode.geometry.scroll_to_viewport(a.scroll_x, a.scroll_y)
            await run.driver.page.mouse.move(x, y)
            await run.driver.page.mouse.wheel(dx, dy)
            await asyncio.sleep(0.1)  # wheel scrolling is applied asynchronously
            return ToolOutcome(ok=True, text=f"scrolled by ({a.scroll_x}, {a.scroll_y}) at ({a.x}, {a.y})")

        async def drag(run: Run, a: DragArgs) -> ToolOutcome:
            mouse = run.driver.page.mouse
            points = [mode._point(p.x, p.y) for p in a.path]
            await mouse.move(*points[0])
            await mouse.down()
            for p in points[1:]:
                await mouse.move(*p, steps=5)
            await mouse.up()
            return ToolOutcome(ok=True, text=f"dragged through {len(points)} points")

        async def wait(run: Run, a: WaitMsArgs) -> ToolOutcome:
            await asyncio.sleep(a.ms / 1000)
            return ToolOutcome(ok=True, text=f"waited {a.ms} ms")

        async def goto(run: Run, a: GotoArgs) -> ToolOutcome:
            run.check_url_allowed(a.url)
            response = await run.driver.page.goto(a.url, wait_until="load")
            return ToolOutcome(ok=response is None or response.ok, text=f"opened {run.driver.page.url}")

        async def save_progress(run: Run, a: SaveProgressArgs) -> ToolOutcome:
            await run.save_progress(a.data)
            return ToolOutcome(ok=True, text="saved")

        async def terminal(run: Run, a: Any) -> ToolOutcome:
            return ToolOutcome(ok=True, text="")

        return [
            Tool("click", "Click at (x, y) of the screenshot.", ClickArgs, click),
            Tool("double_click", "Double-click at (x, y).", PointArgs, double_click),
            Tool("move", "Move the mouse to (x, y).", PointArgs, move),
            Tool("type", "Type text into the focused element (%placeholders% for secrets).", TypeArgs, type_),
            Tool("keypress", "Press keys together, e.g. ['Enter'] or ['Control', 'a'].", KeypressArgs, keypress),
            Tool("scroll", "Scroll by (scroll_x, scroll_y) screenshot pixels with the mouse at (x, y).", ScrollArgs, scroll),
            Tool("drag", "Drag along a path of points.", DragArgs, drag),
            Tool("wait", "Wait (ms).", WaitMsArgs, wait, browser=False),
            Tool("goto", "Open a URL.", GotoArgs, goto),
            Tool("save_progress", "Save data collected so far (merged into earlier saves).", SaveProgressArgs, save_progress, browser=False),
            Tool("done", "Finish with a message and the output.", done_args_model(output_schema), terminal, browser=False),
            Tool("fail", "Give up and say why.", FailArgs, terminal, browser=False),
        ]
