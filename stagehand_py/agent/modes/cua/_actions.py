"""The computer-use protocol: coordinate actions, screen geometry, provider translations. Pure."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ...._errors import InvalidArgumentError

__all__ = [
    "ClickArgs",
    "CuaAction",
    "DragArgs",
    "KeypressArgs",
    "Point",
    "PointArgs",
    "ScreenGeometry",
    "ScrollArgs",
    "TypeArgs",
    "WaitMsArgs",
    "from_anthropic",
    "from_openai",
    "normalise_key",
    "png_size",
]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Point(_Args):
    x: int
    y: int


class ClickArgs(_Args):
    x: int
    y: int
    button: Literal["left", "right", "middle"] = "left"


class PointArgs(_Args):
    x: int
    y: int


class TypeArgs(_Args):
    text: str = Field(description="Typed into the focused element; may hold %placeholders%")


class KeypressArgs(_Args):
    keys: list[str] = Field(min_length=1, description="Keys pressed together, e.g. ['Enter'] or ['Control', 'a']")


class ScrollArgs(_Args):
    x: int
    y: int
    scroll_x: int = 0
    scroll_y: int = 0


class DragArgs(_Args):
    path: list[Point] = Field(min_length=2)


class WaitMsArgs(_Args):
    ms: int = Field(default=1000, ge=0, le=10000)


@dataclass(frozen=True)
class CuaAction:
    """One action of the internal protocol: a tool name and its arguments (screenshot pixels)."""

    tool: str
    args: dict[str, Any]


@dataclass(frozen=True)
class ScreenGeometry:
    """The viewport (CSS pixels) and the screenshot the model sees (image pixels)."""

    viewport_width: int
    viewport_height: int
    screen_width: int
    screen_height: int

    @staticmethod
    def fit(viewport: tuple[int, int], target: tuple[int, int]) -> float:
        """The uniform scale (at most 1) that fits the viewport into ``target``."""
        return min(1.0, target[0] / viewport[0], target[1] / viewport[1])

    def to_viewport(self, x: float, y: float) -> tuple[float, float]:
        """A screenshot point in viewport CSS pixels, clamped inside the viewport."""
        vx = x * self.viewport_width / self.screen_width
        vy = y * self.viewport_height / self.screen_height
        return (min(max(vx, 0.0), self.viewport_width - 1), min(max(vy, 0.0), self.viewport_height - 1))

    def to_screen(self, x: float, y: float) -> tuple[int, int]:
        return (round(x * self.screen_width / self.viewport_width), round(y * self.screen_height / self.viewport_height))

    def scroll_to_viewport(self, dx: float, dy: float) -> tuple[float, float]:
        return (dx * self.viewport_width / self.screen_width, dy * self.viewport_height / self.screen_height)


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG header."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise InvalidArgumentError("not a PNG image")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


_KEYS = {
    "ctrl": "Control", "control": "Control", "cmd": "Meta", "command": "Meta", "super": "Meta", "meta": "Meta",
    "win": "Meta", "alt": "Alt", "option": "Alt", "shift": "Shift", "return": "Enter", "enter": "Enter",
    "esc": "Escape", "escape": "Escape", "space": "Space", "tab": "Tab", "backspace": "Backspace",
    "delete": "Delete", "del": "Delete", "up": "ArrowUp", "down": "ArrowDown", "left": "ArrowLeft",
    "right": "ArrowRight", "arrowup": "ArrowUp", "arrowdown": "ArrowDown", "arrowleft": "ArrowLeft",
    "arrowright": "ArrowRight", "home": "Home", "end": "End", "pageup": "PageUp", "page_up": "PageUp",
    "pagedown": "PageDown", "page_down": "PageDown", "insert": "Insert",
}


def normalise_key(key: str) -> str:
    """A key name from either provider (xdotool-style or upper-case) as Playwright spells it."""
    k = key.strip()
    low = k.lower()
    if low in _KEYS:
        return _KEYS[low]
    if len(low) >= 2 and low[0] == "f" and low[1:].isdigit():
        return low.upper()
    if len(k) == 1:
        return k.lower() if k.isalpha() else k
    return k


def _xy(value: Any) -> tuple[int, int]:
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise InvalidArgumentError(f"expected a coordinate [x, y], got {value!r}")
    return int(value[0]), int(value[1])


def from_anthropic(action: dict[str, Any]) -> CuaAction:
    """Anthropic's ``computer`` tool input (``{"action": "left_click", "coordinate": [x, y]}``, ...)
    as an internal action. Scroll amounts are wheel clicks; one click is taken as 100 pixels."""
    kind = action.get("action")
    if kind in ("left_click", "right_click", "middle_click"):
        x, y = _xy(action.get("coordinate"))
        return CuaAction("click", {"x": x, "y": y, "button": kind.split("_")[0]})
    if kind in ("double_click", "triple_click"):
        x, y = _xy(action.get("coordinate"))
        return CuaAction("double_click", {"x": x, "y": y})
    if kind == "mouse_move":
        x, y = _xy(action.get("coordinate"))
        return CuaAction("move", {"x": x, "y": y})
    if kind == "left_click_drag":
        sx, sy = _xy(action.get("start_coordinate"))
        ex, ey = _xy(action.get("coordinate"))
        return CuaAction("drag", {"path": [{"x": sx, "y": sy}, {"x": ex, "y": ey}]})
    if kind == "type":
        return CuaAction("type", {"text": str(action.get("text", ""))})
    if kind == "key":
        return CuaAction("keypress", {"keys": [normalise_key(k) for k in str(action.get("text", "")).split("+")]})
    if kind == "scroll":
        x, y = _xy(action.get("coordinate"))
        amount = int(action.get("scroll_amount", 3)) * 100
        direction = action.get("scroll_direction", "down")
        dx, dy = {"down": (0, amount), "up": (0, -amount), "right": (amount, 0), "left": (-amount, 0)}[direction]
        return CuaAction("scroll", {"x": x, "y": y, "scroll_x": dx, "scroll_y": dy})
    if kind == "wait":
        return CuaAction("wait", {"ms": int(float(action.get("duration", 1)) * 1000)})
    if kind == "screenshot":
        return CuaAction("screenshot", {})
    raise InvalidArgumentError(f"unsupported Anthropic computer-use action {kind!r}")


def from_openai(action: dict[str, Any]) -> CuaAction:
    """OpenAI's ``computer_call.action`` (``{"type": "click", "x": .., "y": .., "button": ..}``, ...)
    as an internal action."""
    kind = action.get("type")
    if kind == "click":
        button = action.get("button", "left")
        if button not in ("left", "right", "middle"):
            raise InvalidArgumentError(f"unsupported click button {button!r} (back/forward/wheel are not mapped)")
        return CuaAction("click", {"x": int(action["x"]), "y": int(action["y"]), "button": button})
    if kind == "double_click":
        return CuaAction("double_click", {"x": int(action["x"]), "y": int(action["y"])})
    if kind == "move":
        return CuaAction("move", {"x": int(action["x"]), "y": int(action["y"])})
    if kind == "drag":
        return CuaAction("drag", {"path": [{"x": int(p["x"]), "y": int(p["y"])} for p in action.get("path", [])]})
    if kind == "type":
        return CuaAction("type", {"text": str(action.get("text", ""))})
    if kind == "keypress":
        return CuaAction("keypress", {"keys": [normalise_key(k) for k in action.get("keys", [])]})
    if kind == "scroll":
        return CuaAction("scroll", {"x": int(action["x"]), "y": int(action["y"]),
                                    "scroll_x": int(action.get("scroll_x", 0)), "scroll_y": int(action.get("scroll_y", 0))})
    if kind == "wait":
        return CuaAction("wait", {"ms": int(action.get("ms", 1000))})
    if kind == "screenshot":
        return CuaAction("screenshot", {})
    raise InvalidArgumentError(f"unsupported OpenAI computer-use action {kind!r}")
