"""Replaying a :class:`~._recording.RunRecording` through the public verbs, with no model while
nothing drifted.

Each act runs as ``driver.act(Action, variables=..., element=ElementIdentity(...))``, with the
identity of the element it was recorded on: the Stagehand checks the page still shows that element
at the selector, and when it does not, heals the step (one model call, that step only) or, without a
model, refuses with a typed error, so nothing is ever done to another element. Navigations,
key presses and page scrolls run as recorded. An extract or a ``save_progress`` is not asked
again while the page still shows what it read, compared as data (:mod:`._outcome`: one read of
the outline, no model call); otherwise an extract runs fresh (``heal=True``) or the step is
reported drifted. When every step ran, the page is read once more and compared with where the
recorded run ended and with its output (:func:`outcome_differences`).

The first step that cannot run ends the replay (``complete=False``, with the reason); the
caller decides what comes next (the agent continues live; ``--check`` reports the drift).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._actions import substitute
from .._errors import ActionFailedError, InvalidArgumentError, StagehandError
from .._operations._heal import identity_in
from .._secrets import VariableSet
from .._types import ElementIdentity
from ..llm import Usage
from ._outcome import PageView, data_pins, not_shown_on, prune, view_of
from ._recording import RecordedStep, ReplayReport, RunRecording, StepReplay, StepStatus

if TYPE_CHECKING:  # annotations only: _types imports the exporter, which imports this module
    from ._types import Driver

__all__ = ["ReplayOutcome", "outcome_differences", "read_view", "replay_steps"]

logger = logging.getLogger("stagehand_py.agent")


@dataclass
class ReplayOutcome:
    """What a replay did: per step status, the steps as they ran (healed selectors in place),
    the model usage of heals and fresh extracts, and where it stopped."""

    report: ReplayReport
    steps: list[RecordedStep] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    complete: bool = True
    #: True when a fresh extract returned other data than recorded: the recorded output is stale.
    output_stale: bool = False
    extractions: list[Any] = field(default_factory=list)
    #: The pages read at the data steps, and at the end (None until every step ran).
    views: list[PageView] = field(default_factory=list)
    end: PageView | None = None
    #: The page as last read, while no browser step has run since (consecutive data steps share it).
    current: PageView | None = None


async def read_view(driver: Driver, variables: VariableSet) -> PageView:
    """The driver's page as a :class:`PageView` (one snapshot and the title, no model)."""
    snapshot = await driver.snapshot()
    return view_of(snapshot, url=driver.page.url, title=await driver.page.title(), variables=variables)


def outcome_differences(recording: RunRecording, views: list[PageView], end: PageView) -> list[str]:
    """How ``end`` (and the pages read at the data steps) differ from the recorded outcome: the end
    state, then the output's values; empty when as recorded or when nothing of it was recorded."""
    if recording.end is None:  # recorded before end states were kept: nothing to compare
        return []
    found = end.differences(url=recording.end.url, title=recording.end.title, heading=recording.end.heading)
    if recording.output is not None:
        found += [f"output {d}" for d in not_shown_on([*views, end], prune(recording.output, recording.output_unshown),
                                                       apart=recording.output_apart)]
    return found


def _spent(driver: Driver) -> Usage:
    """The driver's model usage so far (a Stagehand keeps it in ``metrics``; another driver: none)."""
    metrics = getattr(driver, "metrics", None)
    total = getattr(metrics, "total", None)
    return total if isinstance(total, Usage) else Usage()


async def _now_at(driver: Driver, selector: str, variables: VariableSet) -> str:
    """What the page shows at ``selector`` now, for a drift report."""
    try:
        identity = identity_in(await driver.snapshot(), selector, variables)
    except StagehandError as exc:
        return f"unknown ({type(exc).__name__})"
    return f"{identity.role} {identity.name!r}" if identity is not None else "no element"


async def replay_steps(
    driver: Driver,
    recording: RunRecording,
    *,
    variables: VariableSet,
    heal: bool,
    check_url: Callable[[str], None] | None = None,
) -> ReplayOutcome:
    """Run ``recording``'s steps on ``driver`` (see the module docstring)."""
    outcome = ReplayOutcome(report=ReplayReport())
    statuses: list[StepReplay] = []
    reason = ""
    for index, step in enumerate(recording.steps):
        summary = step.summary()
        try:
            status, ran, detail = await _replay_one(driver, step, variables, heal, check_url, outcome)
        except InvalidArgumentError:
            raise  # the caller's input (a variable missing, a URL outside the allowed domains): not drift
        except StagehandError as exc:
            detail = str(exc)
            if step.kind == "act" and step.action is not None:
                now = await _now_at(driver, step.action.selector, variables)
                detail = f"was {step.role} {step.name!r}, now {now}: {type(exc).__name__}"
            statuses.append(StepReplay(index=index, kind=step.kind, status="drifted", summary=summary, detail=detail))
            reason = f"step {index + 1} ({summary}) could not be replayed: {detail}"
            outcome.complete = False
            break
        statuses.append(StepReplay(index=index, kind=step.kind, status=status, summary=summary, detail=detail))
        outcome.steps.append(ran)
        if status == "drifted":  # an extract whose data changed, replayed without a model
            outcome.output_stale = True
    done = len(statuses)
    statuses += [StepReplay(index=n, kind=s.kind, status="skipped", summary=s.summary())
                 for n, s in enumerate(recording.steps) if n >= done]
    differences: list[str] = []
    if outcome.complete:
        try:
            outcome.end = await read_view(driver, variables)
            differences = outcome_differences(recording, outcome.views, outcome.end)
        except StagehandError as exc:
            differences = [f"the page could not be read at the end: {type(exc).__name__}: {exc}"]
    outcome.report = ReplayReport(steps=statuses, reason=reason, model_calls=outcome.usage.requests,
                                  outcome_differences=differences)
    return outcome


async def _replay_one(driver: Driver, step: RecordedStep, variables: VariableSet, heal: bool,
                      check_url: Callable[[str], None] | None, outcome: ReplayOutcome) -> tuple[StepStatus, RecordedStep, str]:
    page = driver.page
    if step.kind in ("extract", "save_progress"):
        return await _replay_data(driver, step, variables, heal, outcome)
    outcome.current = None
    if step.kind == "goto":
        url = substitute([step.url], variables)[0] if "%" in step.url else step.url
        if check_url is not None:
            check_url(url)
        await page.goto(url, wait_until="load")
        return "replayed", step, ""
    if step.kind == "back":
        await page.go_back(wait_until="load")
        return "replayed", step, ""
    if step.kind == "press":
        await page.keyboard.press(step.keys)
        return "replayed", step, ""
    if step.kind == "scroll":
        await page.evaluate("(dy) => window.scrollBy(0, dy)", step.pixels)
        return "replayed", step, ""
    return await _replay_act(driver, step, variables, outcome)


async def _replay_act(driver: Driver, step: RecordedStep, variables: VariableSet,
                      outcome: ReplayOutcome) -> tuple[StepStatus, RecordedStep, str]:
    action = step.action
    assert action is not None  # an act step always carries its action (RecordedStep of kind "act")
    element = ElementIdentity(step.role, step.name) if step.role is not None and step.name is not None else None
    # The driver checks, before acting, that the selector still names the recorded element.
    result = await driver.act(action, variables=variables.given or None, element=element)
    outcome.usage = outcome.usage + result.usage
    if not result.success:
        raise ActionFailedError(result.message, selector=action.selector, method=action.method)
    if not result.healed:
        return "replayed", step, ""
    ran = result.actions[-1] if result.actions else action
    now = result.elements[-1] if result.elements else None  # the element the heal chose
    healed = step.model_copy(update={"action": ran.model_copy(update={"description": action.description}),
                                     "role": now.role if now is not None else None,
                                     "name": now.name if now is not None else None})
    shown = f"{now.role} {now.name!r}" if now is not None else "an element of unknown identity"
    return "healed", healed, f"was {step.role} {step.name!r} at {action.selector}; now {shown} at {ran.selector}"


async def _replay_data(driver: Driver, step: RecordedStep, variables: VariableSet, heal: bool,
                       outcome: ReplayOutcome) -> tuple[StepStatus, RecordedStep, str]:
    view = outcome.current
    if view is None:
        view = outcome.current = await read_view(driver, variables)
        outcome.views.append(view)
    missing = view.not_shown(step.pinned, apart=step.apart)
    if not missing:
        if step.kind == "extract":
            outcome.extractions.append(step.data)
        return "replayed", step, ""
    if not heal or step.kind != "extract":  # a save_progress cannot be asked again: its data is stale
        return "drifted", step, "the page shows other data than recorded: " + "; ".join(missing)
    before = _spent(driver)
    value = await driver.extract(step.instruction, step.schema_)
    data = value.model_dump(mode="json") if hasattr(value, "model_dump") else value
    outcome.usage = outcome.usage + (_spent(driver) - before)
    outcome.extractions.append(data)
    if json.dumps(data, sort_keys=True, default=str) != json.dumps(step.data, sort_keys=True, default=str):
        outcome.output_stale = True
    unshown, apart = data_pins([view], data)
    return "fresh", step.model_copy(update={"data": data, "unshown": unshown, "apart": apart}), \
        "extracted again: the recorded data is no longer on the page"
