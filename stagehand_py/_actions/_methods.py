"""The method registry: every :data:`~stagehand_py.ActionMethod`, its argument form, and how it runs.

Each method is split in two so that nothing reaches the browser before every check passed:

- ``prepare(args, raw)`` validates the (already substituted) arguments and turns them into
  parameters; it raises :class:`InvalidArgumentError` quoting ``raw`` (the arguments as the
  action wrote them, placeholders included) and never the substituted values;
- ``run(call, params)`` does the Playwright work on the resolved element.

Argument counts are checked earlier still, before substitution (see :func:`check_arity`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from playwright.async_api import ElementHandle, Page

from .._errors import ActionFailedError, ElementNotFoundError, InvalidArgumentError, UnsupportedMethodError
from .._types import ActionMethod
from .._util import xpath_literal
from ._js import load_js

__all__ = [
    "Dispatches",
    "KNOWN_METHODS",
    "METHODS",
    "MethodCall",
    "MethodSpec",
    "check_arity",
    "normalize_method",
]

MouseButton = Literal["left", "right", "middle"]

#: Every method name, in the order :data:`ActionMethod` lists them.
KNOWN_METHODS: tuple[str, ...] = get_args(ActionMethod)

# Names models (and the TypeScript Stagehand) commonly use for our methods.
_ALIASES: dict[str, str] = {
    "dblclick": "double_click",
    "doubleclick": "double_click",
    "select_option_from_dropdown": "select_option",
    "select": "select_option",
    "scroll_into_view_if_needed": "scroll_into_view",
    "scroll_into_view_element": "scroll_into_view",
    "scroll": "scroll_to",
    "scroll_by_pixel_offset": "scroll_by",
    "previous_chunk": "prev_chunk",
    "drag_to": "drag_and_drop",
    "upload": "set_input_files",
    "fill_input": "fill",
    "press_key": "press",
}
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_ELEMENT_ID = re.compile(r"\d+-\d+")


def normalize_method(method: str) -> str:
    """``"doubleClick"``, ``"double-click"``, ``" Double_Click "`` -> ``"double_click"``; unknown stays unknown."""
    if not isinstance(method, str):
        return repr(method)
    name = _CAMEL.sub("_", method.strip()).replace("-", "_").replace(" ", "_").lower()
    return _ALIASES.get(name, name)


class Dispatches:
    """What one verb sent to the page, in order (``"<method> on <selector>"``): from the moment an
    action is sent it may have taken effect, so it is never run again."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def note(self, what: str) -> None:
        self.sent.append(what)


@dataclass(frozen=True, slots=True)
class MethodCall:
    """Everything a method's ``run`` needs; built by the executor after resolution."""

    page: Page
    element: ElementHandle
    selector: str
    #: Playwright timeout for this step, in milliseconds (> 0), the navigation it starts included.
    timeout_ms: float
    #: Milliseconds (> 0) the element may take to become actionable, before anything is sent.
    probe_ms: float
    #: Resolves a drag target (selector or snapshot id) to an element; owned by the executor.
    resolve: Callable[[str], Awaitable[ElementHandle]]
    #: ``"<method> on <selector>"``, as the records in ``dispatches`` name the action.
    what: str
    #: Where :meth:`dispatching` notes the action as sent (the executor's own record, the verb's).
    dispatches: tuple[Dispatches, ...]

    def dispatching(self) -> None:
        """Note, right before the action is sent to the page, that from now on it may take effect."""
        for record in self.dispatches:
            record.note(self.what)


@dataclass(frozen=True, slots=True)
class MethodSpec:
    """How one method is called and run."""

    name: str
    min_args: int
    max_args: int | None
    #: The expected argument form, as error messages show it.
    form: str
    prepare: Callable[[list[str], list[str], Mapping[str, str] | None], Any]
    run: Callable[[MethodCall, Any], Awaitable[None]]


def check_arity(method: str, arguments: Sequence[object]) -> tuple[MethodSpec, list[object]]:
    """Look the method up and check the argument count, before any substitution.

    Returns the spec and the arguments to use: for methods that take no arguments, empty
    strings are dropped (models often send ``[""]``). Raises
    :class:`UnsupportedMethodError` listing the known methods, or
    :class:`InvalidArgumentError` stating the expected form.
    """
    name = normalize_method(method)
    spec = METHODS.get(name)
    if spec is None:
        raise UnsupportedMethodError(
            f"unknown action method {method!r}; known methods: {', '.join(KNOWN_METHODS)}.",
            method=str(method),
        )
    if not isinstance(arguments, (list, tuple)):
        raise InvalidArgumentError(f"{spec.name} arguments must be a list, e.g. {spec.form}; got a {type(arguments).__name__}.")
    args = list(arguments)
    if spec.max_args == 0:
        args = [a for a in args if a != ""]
    too_few = len(args) < spec.min_args
    too_many = spec.max_args is not None and len(args) > spec.max_args
    if too_few or too_many:
        raise InvalidArgumentError(
            f"{spec.name} expects arguments {spec.form}; got {len(args)} argument{'s' if len(args) != 1 else ''}."
        )
    return spec, args


def _bad(spec_name: str, form: str, position: int, raw: list[str], why: str) -> InvalidArgumentError:
    # Quote the argument as the action wrote it: a %placeholder% stays a placeholder.
    return InvalidArgumentError(f"{spec_name} argument {position} {raw[position - 1]!r} {why}; expected {form}.")


# --- prepare functions ------------------------------------------------------------------


def _no_params(args: list[str], raw: list[str], xpath_map: Mapping[str, str] | None) -> None:
    return None


def _first(args: list[str], raw: list[str], xpath_map: Mapping[str, str] | None) -> str:
    return args[0]


def _prepare_click(args: list[str], raw: list[str], xpath_map: Mapping[str, str] | None) -> MouseButton:
    if not args:
        return "left"
    button = args[0].strip().lower()
    if button not in get_args(MouseButton):
        raise _bad("click", '[] or ["left" | "right" | "middle"]', 1, raw, "is not a mouse button")
    return button  # type: ignore[return-value]


def _prepare_press(args: list[str], raw: list[str], xpath_map: Mapping[str, str] | None) -> str:
    key = args[0].strip()
    if not key:
        raise _bad("press", '[key] such as ["Enter"] or ["Control+A"]', 1, raw, "is empty")
    return key


def _prepare_percent(args: list[str], raw: list[str], xpath_map: Mapping[str, str] | None) -> float:
    text = args[0].strip().removesuffix("%").strip()
    try:
        percent = float(text)
    except ValueError:
        raise _bad("scroll_to", '["50%"] (0% to 100% of the scroll range)', 1, raw, "is not a percentage") from None
    if not 0 <= percent <= 100:
        raise _bad("scroll_to", '["50%"] (0% to 100% of the scroll range)', 1, raw, "is outside 0%..100%")
    return percent


def _prepare_offsets(args: list[str], raw: list[str], xpath_map: Mapping[str, str] | None) -> tuple[float, float]:
    offsets: list[float] = []
    for position, text in enumerate(args, start=1):
        try:
            offsets.append(float(text.strip().removesuffix("px")))
        except ValueError:
            raise _bad("scroll_by", "[dx, dy] in pixels, e.g. [\"0\", \"400\"]", position, raw, "is not a number") from None
    return offsets[0], offsets[1]


def _prepare_drag(args: list[str], raw: list[str], xpath_map: Mapping[str, str] | None) -> str:
    target = args[0].strip()
    form = '[target] where target is a snapshot element id (as in brackets on its outline line) or a selector'
    if not target:
        raise _bad("drag_and_drop", form, 1, raw, "is empty")
    if _ELEMENT_ID.fullmatch(target):
        if xpath_map is None:
            raise _bad(
                "drag_and_drop", form, 1, raw, "is a snapshot element id but no xpath_map was given to resolve it"
            )
        if target not in xpath_map:
            raise ElementNotFoundError(
                f"drag_and_drop target {raw[0]!r} is not an element id of the snapshot (its xpath_map has "
                f"{len(xpath_map)} ids); observe again.",
                method="drag_and_drop",
            )
        return xpath_map[target]
    return target


def _prepare_files(args: list[str], raw: list[str], xpath_map: Mapping[str, str] | None) -> list[str]:
    for position, path in enumerate(args, start=1):
        if not os.path.isfile(path):
            raise _bad("set_input_files", "[path, ...] of existing files", position, raw, "is not an existing file")
    return list(args)


# --- run functions ----------------------------------------------------------------------


async def _probe_then_send(call: MethodCall, send: Callable[..., Awaitable[None]], **options: Any) -> None:
    """A pointer action (``send``: the element's click, hover, check...) first runs Playwright's
    actionability checks alone (trial=True: visible, stable, enabled, receives the pointer) within
    probe_ms; only then is it sent, with the whole timeout for it and for the navigation it starts
    (Playwright waits for that inside the call)."""
    await send(trial=True, timeout=call.probe_ms, **options)
    call.dispatching()
    await send(timeout=call.timeout_ms, **options)


async def _click(call: MethodCall, button: MouseButton) -> None:
    await _probe_then_send(call, call.element.click, button=button)


async def _double_click(call: MethodCall, _: None) -> None:
    await _probe_then_send(call, call.element.dblclick)


async def _hover(call: MethodCall, _: None) -> None:
    await _probe_then_send(call, call.element.hover)


async def _holds_focus(element: ElementHandle) -> bool:
    """True when ``element``, an element inside it, or the field a ``<label>`` controls has the
    focus, asked in Playwright's utility world (a page that fakes ``activeElement`` or overrides
    ``matches`` cannot answer for it)."""
    for query in ("css=:scope:focus", "css=:focus"):
        found = await element.query_selector(query)
        if found is not None:
            await found.dispose()
            return True
    label = await element.query_selector("xpath=self::label")
    if label is None:
        return False
    await label.dispose()
    control_id = await element.get_attribute("for")
    frame = await element.owner_frame()
    controls = (
        await frame.query_selector_all(f"xpath=//*[@id={xpath_literal(control_id)}]")
        if control_id and frame is not None
        else await element.query_selector_all("xpath=.//input|.//textarea|.//select")
    )
    held = False
    for control in controls[:1]:
        held = await control.query_selector("css=:scope:focus") is not None
    for control in controls:
        await control.dispose()
    return held


async def _require_focus(call: MethodCall, method: str, *, typed: str) -> None:
    """Refuse to send keys unless the chosen element has the focus: a page that moves the focus
    (a focus handler, a script) would otherwise receive them, a secret included."""
    if not await _holds_focus(call.element):
        raise ActionFailedError(
            f"{method} on {call.selector}: the element did not keep the focus (the page moved it elsewhere), so "
            f"{typed}. Observe the page again, or act on the element that takes the focus.",
            selector=call.selector,
            method=method,
        )


async def _focus_editable(call: MethodCall, method: str) -> None:
    # Waits (Playwright's utility world) until the element is visible; a disabled or read-only
    # field is refused before it is focused.
    await call.element.wait_for_element_state("visible", timeout=call.probe_ms)
    if not await call.element.is_editable():
        raise ActionFailedError(
            f"{method} on {call.selector}: the element is disabled or read-only, so nothing was typed. Wait until it "
            "is enabled (observe again), or act on the field that is.",
            selector=call.selector,
            method=method,
        )
    await call.element.focus()
    await _require_focus(call, method, typed="nothing was typed")


async def _fill(call: MethodCall, text: str) -> None:
    await _focus_editable(call, "fill")
    call.dispatching()
    await call.element.fill(text, timeout=call.timeout_ms)  # fill() clears first
    # The text went into the field that had the focus when it was inserted; a page that moves the
    # focus during fill() (an input or select handler) is reported, not hidden.
    await _require_focus(call, "fill", typed="the text may have reached another element")


#: Puts the caret at the end of the focused field (email/number inputs have no selection API).
_CARET_TO_END_JS = """el => {
  try { if (typeof el.value === "string" && el.setSelectionRange) el.setSelectionRange(el.value.length, el.value.length); }
  catch (e) { /* no selection API: the caret stays where it is */ }
}"""


async def _type(call: MethodCall, text: str) -> None:
    # Typing appends, like a person who clicks into a field and types: Playwright's type()
    # puts the caret at the *start* of a field it has to focus, so focus it ourselves with the
    # caret at the end first. Then one key event per character, each sent only while the chosen
    # element has the focus (checked from Playwright's utility world before every character): a
    # page that moves the focus mid-word gets a typed error, and no key lands elsewhere.
    await _focus_editable(call, "type")
    await call.element.evaluate(_CARET_TO_END_JS)
    call.dispatching()
    for count, char in enumerate(text):
        await _require_focus(call, "type", typed=f"typing stopped after {count} of {len(text)} characters")
        await call.page.keyboard.type(char)


async def _press(call: MethodCall, key: str) -> None:
    # Focuses the target, checks that it kept the focus, then presses the key or chord.
    await call.element.focus()
    await _require_focus(call, "press", typed="the key was not pressed")
    # press() focuses again (no focus event: it has the focus already) and sends the key.
    call.dispatching()
    await call.element.press(key, timeout=call.timeout_ms)


async def _options_matching(select: ElementHandle, condition: str) -> list[ElementHandle]:
    # Playwright's XPath engine runs in its utility world: a page that overrides
    # HTMLSelectElement.prototype.options or an option's label getter cannot reorder what it reads.
    return await select.query_selector_all(f"xpath=.//option[{condition}]")


async def _option_label(option: ElementHandle) -> str:
    label = await option.get_attribute("label")  # get_attribute and text_content: the utility world
    return label if label is not None else " ".join((await option.text_content() or "").split())


async def _select_option(call: MethodCall, wanted: str) -> None:
    select = await call.element.query_selector("xpath=self::select")
    if select is None:
        tag = await call.element.evaluate("e => e.localName")  # for the message only
        raise ActionFailedError(
            f"select_option needs a native <select>, but {call.selector} is a <{tag}>. "
            "For custom dropdowns, click the control and then click the option.",
            selector=call.selector,
            method="select_option",
        )
    await select.dispose()
    quoted = xpath_literal(wanted)
    # An option's label is its label attribute, else its text with whitespace collapsed; its value
    # the value attribute, else that text. Label first (what a person reads), then value.
    label = f"(@label and @label={quoted}) or (not(@label) and normalize-space(.)={quoted})"
    value = f"(@value and @value={quoted}) or (not(@value) and normalize-space(.)={quoted})"
    for condition in (label, value, "true()"):
        options = await _options_matching(call.element, condition)
        try:
            chosen = options[0] if options and condition != "true()" else None
            if condition == "true()":  # a forgiving label match (case and spacing), same world
                labels = [await _option_label(option) for option in options]
                norm = " ".join(wanted.split()).casefold()
                index = next((i for i, text in enumerate(labels) if " ".join(text.split()).casefold() == norm), None)
                if index is None:
                    shown = ", ".join(repr(text) for text in labels) or "none"
                    raise ActionFailedError(
                        f"select_option on {call.selector}: no option has the requested label or value. "
                        f"Available option labels: {shown}.",
                        selector=call.selector,
                        method="select_option",
                    )
                chosen = options[index]
            if chosen is not None:
                call.dispatching()
                await call.element.select_option(element=chosen, timeout=call.timeout_ms)
                return
        finally:
            for option in options:
                await option.dispose()


async def _check(call: MethodCall, _: None) -> None:
    await _probe_then_send(call, call.element.check)


async def _uncheck(call: MethodCall, _: None) -> None:
    await _probe_then_send(call, call.element.uncheck)


async def _scroll_into_view(call: MethodCall, _: None) -> None:
    call.dispatching()
    await call.element.scroll_into_view_if_needed(timeout=call.timeout_ms)


async def _scroll(call: MethodCall, arg: dict[str, Any]) -> None:
    call.dispatching()
    await call.element.evaluate(load_js("_scroll.js"), arg)


async def _scroll_to(call: MethodCall, percent: float) -> None:
    await _scroll(call, {"op": "to", "percent": percent})


async def _scroll_by(call: MethodCall, offsets: tuple[float, float]) -> None:
    await _scroll(call, {"op": "by", "dx": offsets[0], "dy": offsets[1]})


async def _next_chunk(call: MethodCall, _: None) -> None:
    await _scroll(call, {"op": "chunk", "direction": 1})


async def _prev_chunk(call: MethodCall, _: None) -> None:
    await _scroll(call, {"op": "chunk", "direction": -1})


async def _drag_and_drop(call: MethodCall, target_selector: str) -> None:
    target = await call.resolve(target_selector)
    try:
        # The same sequence Playwright's own drag_to uses; Chromium turns it into HTML5
        # drag events for draggable elements, and plain mouse events reach the others.
        await _probe_then_send(call, call.element.hover)
        await call.page.mouse.down()
        await target.hover(timeout=call.timeout_ms)
        box = await target.bounding_box()
        if box is not None:  # a second move inside the target for pages that wait for two
            await call.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, steps=2)
        await call.page.mouse.up()
    finally:
        await target.dispose()


async def _set_input_files(call: MethodCall, paths: list[str]) -> None:
    call.dispatching()
    await call.element.set_input_files(paths, timeout=call.timeout_ms)


def _spec(
    name: str,
    form: str,
    run: Callable[[MethodCall, Any], Awaitable[None]],
    *,
    args: tuple[int, int | None] = (0, 0),
    prepare: Callable[[list[str], list[str], Mapping[str, str] | None], Any] = _no_params,
) -> tuple[str, MethodSpec]:
    return name, MethodSpec(name=name, min_args=args[0], max_args=args[1], form=form, prepare=prepare, run=run)


#: The registry, keyed by method name.
METHODS: Mapping[str, MethodSpec] = dict(
    [
        _spec("click", '[] or ["left" | "right" | "middle"]', _click, args=(0, 1), prepare=_prepare_click),
        _spec("double_click", "[] (no arguments)", _double_click),
        _spec("hover", "[] (no arguments)", _hover),
        _spec("fill", "[text] (the field is cleared first)", _fill, args=(1, 1), prepare=_first),
        _spec("type", "[text] (typed key by key)", _type, args=(1, 1), prepare=_first),
        _spec("press", '[key] such as ["Enter"] or ["Control+A"]', _press, args=(1, 1), prepare=_prepare_press),
        _spec("select_option", "[label_or_value] of a native <select>", _select_option, args=(1, 1), prepare=_first),
        _spec("check", "[] (no arguments)", _check),
        _spec("uncheck", "[] (no arguments)", _uncheck),
        _spec("scroll_into_view", "[] (no arguments)", _scroll_into_view),
        _spec("scroll_to", '["50%"] (0% to 100% of the scroll range)', _scroll_to, args=(1, 1), prepare=_prepare_percent),
        _spec("scroll_by", '[dx, dy] in pixels, e.g. ["0", "400"]', _scroll_by, args=(2, 2), prepare=_prepare_offsets),
        _spec("next_chunk", "[] (no arguments)", _next_chunk),
        _spec("prev_chunk", "[] (no arguments)", _prev_chunk),
        _spec(
            "drag_and_drop",
            '[target] where target is a snapshot element id (as in brackets on its outline line) or a selector',
            _drag_and_drop,
            args=(1, 1),
            prepare=_prepare_drag,
        ),
        _spec("set_input_files", "[path, ...] of existing files", _set_input_files, args=(1, None), prepare=_prepare_files),
    ]
)
