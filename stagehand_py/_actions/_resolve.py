"""Selector resolution: one selector string -> exactly one ElementHandle, across frames and shadow roots.

Three selector forms are accepted:

- the **canonical xpath** the snapshot emits (``xpath=/html[1]/body[1]/div[2]/text()[1]``):
  every step is ``localname[n]`` (1-based among element siblings with that local name;
  ``*[local-name()='localname'][n]`` is the same step, the form the snapshot uses outside
  the HTML namespace), ``text()[n]`` or ``text()[normalize-space()][n]`` (the n-th text
  node, resp. the n-th non-blank one). Two hops make one path reach anywhere on the page:

  * after an ``iframe[n]`` / ``frame[n]`` step, the following steps continue in that frame's
    document (same-origin, nested, and out-of-process cross-site frames alike: we ask
    Playwright for the iframe's ``content_frame()`` and go on there);
  * ``//`` right after an element step enters that element's shadow root (open, or closed:
    DevTools finds it and opens it to Playwright's utility world only, ``_closed_roots.py``).

  A ``text()[n]`` step resolves to the text node's parent element (you cannot click a text
  node). The walk is done by Playwright's selector engines (XPath, and CSS for open shadow
  roots), which run in Playwright's utility world: a page that overrides DOM getters or
  ``document.evaluate`` cannot steer it, and neither can a page that pre-defines the old
  closed-root record in its own world. ``_resolver.js`` (the page's world) only explains a failure.
- any **other xpath** (``xpath=//button[@id='x']`` or a bare string starting with ``/``):
  evaluated by Playwright's XPath engine in the main frame, without hops;
- any **Playwright selector** (``css=...``, ``text=...``, ``role=...``, a bare CSS selector).

Every form must match exactly one element: none raises :class:`ElementNotFoundError`
(after polling until ``timeout``, since elements often appear a moment later), more than one
raises :class:`AmbiguousSelectorError` at once.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from playwright.async_api import ElementHandle, Frame, Page
from playwright.async_api import Error as PlaywrightError

from .._errors import AmbiguousSelectorError, ElementNotFoundError, InvalidArgumentError, PageClosedError
from .._util import xpath_literal
from ._closed_roots import open_closed_roots
from ._js import load_js
from ._translate import is_closed_error, is_transient_error

__all__ = [
    "DEFAULT_TIMEOUT",
    "CanonicalStep",
    "install_page_helpers",
    "parse_canonical_xpath",
    "resolve_element",
]

logger = logging.getLogger("stagehand_py._actions")

#: Seconds an action (resolution included) may take unless the caller says otherwise.
DEFAULT_TIMEOUT = 10.0
_POLL_INTERVAL = 0.1
#: Seconds between two openings of a frame's closed shadow roots while one resolution polls.
_REOPEN_EVERY = 1.0

# The key both JS files use; a test checks they agree with this constant.
SHADOW_STORE_KEY = "__stagehand_py_closed_shadow_roots_v1__"

_NAME = r"[A-Za-z_][\w.\-]*"
# name[n] | *[local-name()='name'][n] (how the snapshot writes SVG/MathML steps, so that the
# path also works in document.evaluate) | text()[n] | text()[normalize-space()][n] (counts
# only non-blank text nodes, as CDP drops whitespace-only ones).
# In the local-name() form any name the HTML parser accepts may appear (``x:y``), quoted either way.
_FOREIGN = r"\*\[local-name\(\)=(?:'[^'/]+'|\"[^\"/]+\")\]"
_STEP = rf"(?:text\(\)(?:\[normalize-space\(\)\])?|{_NAME}|{_FOREIGN})\[[1-9]\d*\]"
_FOREIGN_STEP = re.compile(r"\*\[local-name\(\)=(?:'([^'/]+)'|\"([^\"/]+)\")\]")
_CANONICAL = re.compile(rf"(?:/{{1,2}}{_STEP})+")
_STEP_SPLIT = re.compile(rf"(/{{1,2}})({_STEP})")
_FRAME_TAGS = frozenset({"iframe", "frame"})


@dataclass(frozen=True, slots=True)
class CanonicalStep:
    """One step of a canonical xpath."""

    #: Lowercased local name, or ``"text()"``.
    name: str
    #: 1-based index among siblings of the same kind.
    index: int
    #: True when the step is looked up inside the previous element's shadow root (``//``).
    shadow: bool
    #: The step as written, for error messages (``"button[2]"``).
    raw: str
    #: For text steps: count only text nodes that are not blank (``text()[normalize-space()][n]``).
    nonblank: bool = False

    @property
    def is_text(self) -> bool:
        return self.name == "text()"

    @property
    def is_frame(self) -> bool:
        return self.name in _FRAME_TAGS


def parse_canonical_xpath(path: str) -> list[CanonicalStep] | None:
    """Split a canonical xpath into steps, or return None when ``path`` is not canonical.

    Canonical means: starts with a single ``/``; every step is ``name[n]`` or ``text()[n]``;
    ``//`` only right after an element step (a shadow hop); ``text()`` only as the last step.
    Anything else (predicates, axes, unindexed steps) is an ordinary xpath.
    """
    if not path.startswith("/") or path.startswith("//") or not _CANONICAL.fullmatch(path):
        return None
    steps: list[CanonicalStep] = []
    for sep, raw in _STEP_SPLIT.findall(path):
        head, _, index = raw[:-1].rpartition("[")
        foreign = _FOREIGN_STEP.fullmatch(head)
        name = (foreign.group(1) or foreign.group(2)) if foreign else head.partition("[")[0]
        step = CanonicalStep(
            name=name.lower(), index=int(index), shadow=sep == "//", raw=raw, nonblank=head.endswith("[normalize-space()]")
        )
        if steps and steps[-1].is_text:
            return None  # nothing can follow a text node
        steps.append(step)
    return steps


Parsed: TypeAlias = (
    tuple[Literal["canonical"], list[CanonicalStep]] | tuple[Literal["xpath"], str] | tuple[Literal["playwright"], str]
)


def _parse_selector(selector: str) -> Parsed:
    if not isinstance(selector, str) or not selector.strip():
        raise InvalidArgumentError(
            f"selector must be a non-empty string such as 'xpath=/html[1]/body[1]/button[1]' or 'css=#id'; got {selector!r}"
        )
    text = selector.strip()
    if text.startswith("xpath="):
        path = text[len("xpath=") :].strip()
    elif text.startswith("/") or text.startswith("(/"):
        path = text
    else:
        return ("playwright", text)
    steps = parse_canonical_xpath(path)
    if steps is not None:
        return ("canonical", steps)
    return ("xpath", path)


def _path_of(steps: list[CanonicalStep]) -> str:
    return "".join(("//" if step.shadow else "/") + step.raw for step in steps) or "/"


class _Miss:
    """Why one resolution attempt found nothing; raised as ElementNotFoundError at the deadline."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message


def _describe_failure(selector: str, steps: list[CanonicalStep], offset: int, failure: dict[str, Any]) -> str:
    """Turn the resolver's failure object into 'step 4 'button[2]' matched nothing under ...'."""
    local = int(failure.get("step", len(steps) - offset - 1))
    number = offset + local + 1
    step = steps[offset + local]
    under = _path_of(steps[: offset + local])
    kind = failure.get("failure")
    head = f"{selector!s}: step {number} '{step.raw}'"
    if kind == "no-shadow-root":
        return (
            f"{head} enters the shadow root of {under}, but no shadow root there (open, or closed as DevTools "
            "reports it) has that child. The page changed since the snapshot: observe again."
        )
    if kind == "missing":
        available = int(failure.get("available", 0))
        if step.is_text:
            noun = "text node" if available == 1 else "text nodes"
        else:
            noun = f"<{step.name}> child" if available == 1 else f"<{step.name}> children"
        where = f"{under} (inside its shadow root)" if step.shadow else under
        there = f"it has {available or 'no'} {noun}"
        return f"{head} matched nothing under {where} ({there}). The page changed since the snapshot: observe again."
    return f"{head} did not resolve to an element ({kind})."


_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _element_test(step: CanonicalStep) -> str:
    """An XPath step for ``step`` with the resolver's semantics: the local name compared
    case-insensitively (``foreignObject`` and ``foreignobject`` alike), the n-th such child."""
    lowered = f"translate(local-name(), '{_UPPER}', '{_UPPER.lower()}')"
    return f"*[{lowered}={xpath_literal(step.name)}][{step.index}]"


def _text_predicate(step: CanonicalStep) -> str:
    """``text()[n]`` as a predicate on its parent: the element that has that text node."""
    return f"[text(){'[normalize-space()]' if step.nonblank else ''}[{step.index}]]"


def _css_name(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else f"\\{ord(ch):x} " for ch in name)


async def _one(handles: list[ElementHandle]) -> ElementHandle | None:
    """The single handle of ``handles`` (a canonical step names at most one), the rest disposed."""
    for extra in handles[1:]:
        await extra.dispose()
    return handles[0] if len(handles) == 1 else None


async def _shadow_child(host: ElementHandle, step: CanonicalStep) -> ElementHandle | None:
    """The ``step`` child of ``host``'s *open* shadow root, found by Playwright in its utility world.

    Playwright's CSS engine pierces open shadow roots: ``:scope > x:nth-of-type(n)`` matches the
    n-th ``x`` among the shadow root's children and among the host's light children alike; a
    shadow root's child is the one without a parent element.
    """
    found: list[ElementHandle] = []
    for candidate in await host.query_selector_all(f"css=:scope > {_css_name(step.name)}:nth-of-type({step.index})"):
        light = await candidate.query_selector("xpath=parent::*")
        if light is None:
            found.append(candidate)
        else:
            await light.dispose()
            await candidate.dispose()
    return await _one(found)


async def _walk_in_utility_world(frame: Frame, segment: list[CanonicalStep]) -> ElementHandle | None:
    """Resolve one frame's segment with Playwright's selector engines, which run in Playwright's
    utility world: page scripts that override DOM getters or ``document.evaluate`` cannot steer
    it. None when the element is not there, or sits behind a closed shadow root (which that world
    cannot enter) or a text step right after a shadow hop."""
    current: ElementHandle | None = None
    i = 0
    try:
        while i < len(segment):
            step = segment[i]
            if step.is_text:  # only ever right after a shadow hop here: its host's shadow text
                return None
            if step.shadow:
                if current is None:
                    return None
                child = await _shadow_child(current, step)
                await current.dispose()
                current = child
                if current is None:
                    return None
                i += 1
                if i < len(segment) and segment[i].is_text:
                    if await current.query_selector(f"xpath=self::*{_text_predicate(segment[i])}") is None:
                        return None
                    i += 1
                continue
            # A run of plain steps (up to the next shadow hop): one XPath query.
            parts: list[str] = []
            while i < len(segment) and not segment[i].shadow:
                if segment[i].is_text:
                    parts[-1] += _text_predicate(segment[i])
                else:
                    parts.append(_element_test(segment[i]))
                i += 1
            if current is None:
                found = await frame.locator("xpath=/" + "/".join(parts)).element_handles()
            else:
                found = await current.query_selector_all("xpath=./" + "/".join(parts))
                await current.dispose()
            current = await _one(found)
            if current is None:
                return None
        result, current = current, None
        return result
    finally:
        if current is not None:
            await current.dispose()


async def _walk_in_page_world(frame: Frame, segment: list[CanonicalStep]) -> ElementHandle | dict[str, Any]:
    """The segment walked by ``_resolver.js`` in the page's own world: the element, or a failure."""
    payload = {
        "mode": "canonical",
        "steps": [
            {"name": s.name, "index": s.index, "text": s.is_text, "nonblank": s.nonblank, "shadow": s.shadow}
            for s in segment
        ],
    }
    handle = await frame.evaluate_handle(load_js("_resolver.js"), payload)
    element = handle.as_element()
    if element is not None:
        return element
    failure: dict[str, Any] = await handle.json_value()
    await handle.dispose()
    return failure


async def _resolve_segment(
    page: Page, frame: Frame, selector: str, steps: list[CanonicalStep], offset: int, end: int, opened: dict[Frame, float]
) -> ElementHandle | _Miss:
    segment = steps[offset:end]
    element = await _walk_in_utility_world(frame, segment)
    now = time.monotonic()
    if element is None and any(step.shadow for step in segment) and now - opened.get(frame, -_REOPEN_EVERY) >= _REOPEN_EVERY:
        # Perhaps behind a closed shadow root: open this target's closed roots to Playwright's
        # utility world over DevTools (_closed_roots.py) and walk again; while polling, at most
        # every _REOPEN_EVERY seconds (a root attached meanwhile is found on the next one).
        opened[frame] = now
        if await open_closed_roots(page, frame):
            element = await _walk_in_utility_world(frame, segment)
    if element is not None:
        return element
    # Not found where the page cannot interfere. The page-world walk only explains which step
    # failed; an element only the page's world reports is what an overridden DOM getter (or a
    # record the page fed) shows, never acted on.
    outcome = await _walk_in_page_world(frame, segment)
    if isinstance(outcome, dict):
        return _Miss(_describe_failure(selector, steps, offset, outcome))
    await outcome.dispose()
    return _Miss(
        f"{selector!s} names no element in the document, although the page's own scripts report one there "
        "(they override DOM built-ins). Nothing was done; observe the page again."
    )


async def _resolve_canonical(
    page: Page, frame: Frame, selector: str, steps: list[CanonicalStep], opened: dict[Frame, float]
) -> ElementHandle | _Miss:
    """Walk the steps frame by frame; hop into frames through Playwright."""
    offset = 0
    while True:
        # The segment for this frame ends after the first frame step that has steps after it.
        end = len(steps)
        for i in range(offset, len(steps) - 1):
            if steps[i].is_frame and not steps[i + 1].shadow:
                end = i + 1
                break
        element = await _resolve_segment(page, frame, selector, steps, offset, end, opened)
        if isinstance(element, _Miss):
            return element
        if end == len(steps):
            return element
        child = await element.content_frame()
        await element.dispose()
        if child is None:
            step = steps[end - 1]
            return _Miss(
                f"{selector}: step {end} '{step.raw}' is not a frame with a document (yet) under "
                f"{_path_of(steps[: end - 1])}."
            )
        frame = child
        offset = end


async def _resolve_xpath(frame: Frame, selector: str, path: str) -> ElementHandle | _Miss:
    # Playwright's XPath engine (its utility world, out of the page's reach) keeps elements only:
    # a path to a text or attribute node names the element holding it.
    try:
        found = await frame.locator(f"xpath=({path})/ancestor-or-self::*[1]").element_handles()
    except PlaywrightError as exc:
        if "xpath" in str(exc).lower() and not is_transient_error(exc) and not is_closed_error(exc):
            raise InvalidArgumentError(f"{selector!s} is not a valid xpath: {str(exc).splitlines()[0]}") from exc
        raise
    if len(found) > 1:
        for extra in found:
            await extra.dispose()
        raise AmbiguousSelectorError(
            f"{selector!s} matches {len(found)} elements; an action needs exactly one. "
            "Make the xpath more specific (e.g. wrap it as (...)[1]) or observe again.",
            selector=selector,
        )
    if not found:
        return _Miss(f"{selector!s} matched nothing in the main frame (ordinary xpaths do not enter iframes or shadow roots).")
    return found[0]


async def _resolve_playwright(frame: Frame, selector: str) -> ElementHandle | _Miss:
    locator = frame.locator(selector)
    count = await locator.count()
    if count > 1:
        raise AmbiguousSelectorError(
            f"{selector!s} matches {count} elements; an action needs exactly one. Make the selector "
            "more specific or observe again.",
            selector=selector,
        )
    if count == 0:
        return _Miss(f"{selector!s} matched nothing.")
    handle = await locator.element_handle(timeout=1000)
    return handle


async def resolve_element(page: Page, selector: str, *, timeout: float = DEFAULT_TIMEOUT) -> ElementHandle:
    """Return the one element ``selector`` names, polling for up to ``timeout`` seconds.

    Raises :class:`ElementNotFoundError` (with the failing step for canonical paths) when
    nothing matched by the deadline, :class:`AmbiguousSelectorError` when several elements
    match, :class:`InvalidArgumentError` for a malformed selector, and
    :class:`PageClosedError` when the page is gone. The caller owns the returned handle
    (dispose it when done).
    """
    parsed = _parse_selector(selector)
    deadline = time.monotonic() + max(0.0, timeout)
    opened: dict[Frame, float] = {}  # when each frame's closed shadow roots were last opened
    while True:
        if page.is_closed():
            raise PageClosedError(f"cannot resolve {selector!s}: the page is closed.")
        try:
            if parsed[0] == "canonical":
                outcome = await _resolve_canonical(page, page.main_frame, selector, parsed[1], opened)
            elif parsed[0] == "xpath":
                outcome = await _resolve_xpath(page.main_frame, selector, parsed[1])
            else:
                outcome = await _resolve_playwright(page.main_frame, parsed[1])
        except PlaywrightError as exc:
            if is_closed_error(exc) or page.is_closed():
                raise PageClosedError(f"cannot resolve {selector!s}: the page or browser was closed.") from exc
            if is_transient_error(exc):
                outcome = _Miss(f"{selector!s}: the document changed while resolving ({str(exc).splitlines()[0]}).")
            elif parsed[0] == "playwright" and "selector" in str(exc).lower():
                raise InvalidArgumentError(f"{selector!s} is not a valid selector: {str(exc).splitlines()[0]}") from exc
            else:
                raise ElementNotFoundError(
                    f"{selector!s} could not be resolved: {str(exc).splitlines()[0]}", selector=selector
                ) from exc
        if isinstance(outcome, ElementHandle):
            return outcome
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ElementNotFoundError(outcome.message, selector=selector)
        await asyncio.sleep(min(_POLL_INTERVAL, remaining))


async def install_page_helpers(page: Page) -> None:
    """Record closed shadow roots in the page's world, in this page and its future documents.

    Adds ``_shadow_init.js`` as an init script of the page's *context* (so it runs before any
    page script in every new document and frame, out-of-process iframes included) and
    evaluates it once in every frame that exists now.

    Resolution no longer trusts this record (a page can pre-define or override it): closed roots
    are found over DevTools and opened to Playwright's utility world (``_closed_roots.py``); the
    record only lets ``_resolver.js`` explain a failed step. Idempotent: a marker in the page stops a second install, and the script
    itself never patches a document twice.
    """
    script = load_js("_shadow_init.js")
    try:
        installed = await page.main_frame.evaluate(f"Object.prototype.hasOwnProperty.call(globalThis, {SHADOW_STORE_KEY!r})")
    except PlaywrightError as exc:
        if is_closed_error(exc) or page.is_closed():
            raise PageClosedError("cannot install the page helpers: the page is closed.") from exc
        installed = False
    if installed:
        return
    await page.context.add_init_script(script=script)
    for frame in page.frames:
        try:
            await frame.evaluate(script)
        except PlaywrightError as exc:  # a frame that detached meanwhile needs nothing
            logger.debug("page helpers not evaluated in frame %s: %s", frame.url, str(exc).splitlines()[0])
