"""What the run viewer keeps of a run while it happens: its steps, a masked picture of the page at
each (the chosen element's rectangle with it), the outline lines around that element, the model's
answer, the outcome, the time and the usage.

A :class:`RunRecorder` watches one browser context (:func:`~stagehand_py.browser._recording.watch_actions`):
the executor calls :meth:`RunRecorder.before_action` right before an action is sent, once the
element is resolved, so the picture is the page the action met and the box is that element's
rectangle then (CSS pixels of the viewport, as the picture is taken). A step is a verb call
(:func:`verb_step`), or an agent step when an agent run opened it (its verbs then add to it).
Everything kept as text is redacted with every value the recorder was told to hide.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._actions import action_title
from .._secrets import VariableSet
from .._types import Action, ActResult
from .._usage import Usage
from .._vision import masked_screenshot
from ..browser._recording import action_watcher, remember_variables, trace_group, watch_actions

if TYPE_CHECKING:
    from .._session import PageSession
    from ..snapshot import Snapshot

__all__ = ["Picture", "RunRecorder", "Step", "recorder_of", "verb_step"]

logger = logging.getLogger("stagehand_py")


#: Outline lines kept on each side of the chosen element's line.
_AROUND = 6
#: Seconds a picture may take: a page that hangs must not hold up the run it pictures.
_PICTURE_TIMEOUT = 10.0


@dataclass
class Picture:
    """A masked screenshot of the viewport (PNG, one image pixel per CSS pixel) and the numbered
    boxes on it: ``(label, x, y, width, height)`` in CSS pixels of the viewport."""

    png: bytes
    width: int
    height: int
    boxes: list[tuple[str, float, float, float, float]] = field(default_factory=list)
    #: The selector of the element boxed first (the action's), to find its outline line.
    selector: str = ""


@dataclass
class Step:
    number: int
    title: str
    started: float
    ended: float | None = None
    pictures: list[Picture] = field(default_factory=list)
    #: The outline lines the model saw around the chosen element, and which one is that element.
    outline: list[str] = field(default_factory=list)
    chosen: int | None = None
    #: The model's answer (tool, element, method, arguments with placeholders, reasoning fields).
    answer: dict[str, Any] = field(default_factory=dict)
    #: What happened (the act's result, what was dispatched, heal or replay, checks).
    outcome: dict[str, Any] = field(default_factory=dict)
    ok: bool | None = None
    usage: Usage = field(default_factory=Usage)
    #: Opened by an agent run: the verbs it calls add to it instead of making steps of their own.
    agent: bool = False


class RunRecorder:
    """The steps of one run on one browser context (see the module's docstring)."""

    def __init__(self, title: str = "") -> None:
        self.title = title
        self.steps: list[Step] = []
        self.variables = VariableSet.of(None)
        self.started = time.monotonic()
        self.meta: dict[str, Any] = {}
        self._open: Step | None = None

    # --- the watcher the executor calls ----------------------------------------------------

    def hide(self, variables: VariableSet) -> None:
        self.variables = variables.remembering(self.variables)

    async def before_action(self, page: Any, element: Any, action: Any, variables: VariableSet) -> None:
        self.hide(variables)
        step = self._open or self.begin(f"act: {action_title(action)}")
        try:
            box = await element.bounding_box()
            picture = await self._picture(page)
        except Exception as exc:  # the page is going; the action will say what happened
            logger.debug("run viewer: no picture before %s: %r", action_title(action), exc)
            return
        if box is not None:
            label = str(sum(len(p.boxes) for p in step.pictures) + 1)
            picture.boxes.append((label, box["x"], box["y"], box["width"], box["height"]))
        picture.selector = getattr(action, "selector", "")
        step.pictures.append(picture)

    async def _picture(self, page: Any) -> Picture:
        # Named in a trace that records the page: these calls are the viewer's, not the run's.
        async with asyncio.timeout(_PICTURE_TIMEOUT), trace_group(page, "stagehand_py run viewer: picture", self.variables):
            viewport = page.viewport_size or await page.evaluate("({width: innerWidth, height: innerHeight})")
            png = await masked_screenshot(page, self.variables, type="png", scale="css")
        return Picture(png=png, width=int(viewport["width"]), height=int(viewport["height"]))

    async def picture_if_none(self, page: Any, step: Step, boxes: Sequence[tuple[str, Any]] = ()) -> None:
        """A picture of the page as the step left it, when the step has none (no action was sent),
        with ``boxes`` (label, element handle) drawn."""
        if step.pictures:
            return
        try:
            picture = await self._picture(page)
            for label, handle in boxes:
                box = await handle.bounding_box()
                if box is not None:
                    picture.boxes.append((label, box["x"], box["y"], box["width"], box["height"]))
        except Exception as exc:  # a closed page: the step keeps its words
            logger.debug("run viewer: no picture after %s: %r", step.title, exc)
            return
        step.pictures.append(picture)

    # --- steps ------------------------------------------------------------------------------

    def begin(self, title: str, *, agent: bool = False) -> Step:
        step = Step(number=len(self.steps) + 1, title=self.variables.redact(title), started=time.monotonic(), agent=agent)
        self.steps.append(step)
        self._open = step
        return step

    def end(self, step: Step, *, ok: bool | None, outcome: Mapping[str, Any] | None = None, usage: Usage | None = None) -> None:
        step.ended = time.monotonic()
        step.ok = ok
        step.outcome.update(outcome or {})
        if usage is not None:
            step.usage = step.usage + usage
        if self._open is step:
            self._open = None

    @property
    def open_agent_step(self) -> Step | None:
        return self._open if self._open is not None and self._open.agent else None

    def outline_around(self, step: Step, snapshot: Snapshot | None, *, element_id: str | None = None) -> None:
        """Keep the lines of ``snapshot`` around the chosen element (by id, or the xpath of the
        step's first boxed action), redacted; the whole outline's first lines when none is known."""
        if snapshot is None or step.outline:
            return
        lines = snapshot.tree.split("\n")
        if element_id is None and step.pictures and step.pictures[0].selector.startswith("xpath="):
            xpath = step.pictures[0].selector.removeprefix("xpath=")
            element_id = next((eid for eid, path in snapshot.xpath_map.items() if path == xpath), None)
        index = next((i for i, line in enumerate(lines) if element_id and line.lstrip().startswith(f"[{element_id}]")), None)
        start = 0 if index is None else max(0, index - _AROUND)
        end = (2 * _AROUND + 1) if index is None else index + _AROUND + 1
        step.outline = [self.variables.redact(line) for line in lines[start:end]]
        step.chosen = None if index is None else index - start


def recorder_of(context: Any) -> RunRecorder | None:
    """The run viewer's recorder watching ``context``, if any."""
    watcher = action_watcher(context)
    return watcher if isinstance(watcher, RunRecorder) else None


@contextlib.contextmanager
def watching(context: Any, recorder: RunRecorder) -> Any:
    """Record the runs on ``context`` into ``recorder`` while inside (a recorder already there stays)."""
    if recorder_of(context) is not None:
        yield recorder_of(context)
        return
    watch_actions(context, recorder)
    try:
        yield recorder
    finally:
        watch_actions(context, None)


class VerbStep:
    """One verb's call as the recorder sees it: ``result`` is what the verb returned."""

    def __init__(self, recorder: RunRecorder | None, step: Step | None, session: PageSession, title: str,
                 spent: Callable[[], Usage]) -> None:
        self.recorder, self.step, self.session, self.title, self._spent = recorder, step, session, title, spent
        self._before = spent() if step is not None else None  # read only when a recorder keeps the step
        self.result: Any = None

    async def finish(self, error: BaseException | None) -> None:
        if self.recorder is None or self.step is None:
            return
        step, recorder = self.step, self.recorder
        outcome, ok, boxes = _outcome(self.result, error, recorder.variables)
        assert self._before is not None  # a step: read at the start
        usage = self._spent() - self._before
        if step.agent:  # the agent step's own outcome is its tool's: this verb's goes under it
            step.outcome.setdefault("verbs", []).append({"verb": self.title, **outcome})
            step.usage = step.usage + usage
        else:
            step.answer.update(_answer(self.result, recorder.variables))
            handles = []
            for label, selector in boxes:
                with contextlib.suppress(Exception):
                    handles.append((label, await self.session.page.query_selector(selector)))
            await recorder.picture_if_none(self.session.page, step, [(lb, h) for lb, h in handles if h is not None])
            recorder.end(step, ok=ok, outcome=outcome, usage=usage)
        recorder.outline_around(step, self.session.last_read)


@contextlib.asynccontextmanager
async def verb_step(session: PageSession, what: str, subject: str, variables: VariableSet, *,
                    spent: Callable[[], Usage]) -> AsyncIterator[VerbStep]:
    """A verb's call (``act: click "Sign in"``: the verb, and its instruction or action): a group of
    the trace recording its context, and a step of the run viewer watching it (a part of the agent
    step that called it, inside an agent run). ``spent`` tells the model usage so far (the verb's
    is the difference)."""
    title = f"{what}: {subject}".rstrip(": ")
    context = session.page.context
    remember_variables(context, variables)
    recorder = recorder_of(context)
    step = None
    if recorder is not None:
        step = recorder.open_agent_step or recorder.begin(title)
    verb = VerbStep(recorder, step, session, variables.redact(title) if step is not None else title, spent)
    async with trace_group(session.page, title, variables):
        try:
            yield verb
        except BaseException as exc:
            await verb.finish(exc)
            raise
    await verb.finish(None)


def _answer(result: Any, variables: VariableSet) -> dict[str, Any]:
    """What the verb acted on, as the model answered it (or the caller gave it): the first action's
    element, method and arguments (placeholders, never values), and the near misses repaired."""
    actions = result.actions if isinstance(result, ActResult) else []
    if not actions:
        return {}
    first = actions[0]
    answer = {"element": first.description, "method": first.method, "arguments": first.arguments,
              "selector": first.selector, "repairs": [f"{r.answered} -> {r.done} ({r.outcome})" for r in first.repairs]}
    redacted: dict[str, Any] = variables.redact_data(answer)
    return redacted


def _outcome(result: Any, error: BaseException | None, variables: VariableSet
             ) -> tuple[dict[str, Any], bool | None, list[tuple[str, str]]]:
    """A verb's outcome for the viewer, whether it succeeded, and the elements to box when no
    action was sent (observe's results: (label, selector))."""
    if error is not None:
        return {"error": type(error).__name__, "message": variables.redact(str(error))[:2000]}, False, []
    if isinstance(result, ActResult):
        shown = result.model_dump(mode="json", include={"success", "message", "healed", "cache_hit", "waited",
                                                         "dispatched", "repairs"})
        shown["actions"] = [action_title(a) for a in result.actions]
        return variables.redact_data(shown), result.success, []
    if isinstance(result, list) and all(isinstance(a, Action) for a in result):
        boxes = [(str(n), a.selector) for n, a in enumerate(result[:9], start=1)]
        return variables.redact_data({"actions": [f"{n}. {action_title(a)}" for n, a in enumerate(result, start=1)]}), \
            True, boxes
    explain = getattr(result, "explain", None)
    if isinstance(getattr(result, "passed", None), bool) and callable(explain):  # expect()'s Expectation
        return variables.redact_data({"passed": result.passed, "explanation": explain()}), result.passed, []
    data = result.model_dump(mode="json") if hasattr(result, "model_dump") else result
    return variables.redact_data({"data": data}), True, []
