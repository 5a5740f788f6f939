"""act(): run an Action (no model), or plan one action from an instruction and run it.

- Planning reads a fresh snapshot (split and ranked like observe, see :mod:`._pipeline`) and
  asks for one element; when none fits while the page is still changing, it looks again as
  the page changes, up to ``dom_settle_timeout`` (:func:`._pipeline.look`).
- Custom dropdowns, menus and other two-step controls: when the model says its click opens
  options, the page is read again after the click, the outlines are diffed, and the model
  picks among the elements that appeared or changed only (unless the click loaded another page,
  or was on a checkbox, radio, switch or tab: then it opened nothing, and the act is done). The element just clicked is never
  offered nor accepted again (a second click would close the list, flip a sort back, untick a
  box); when nothing new appeared, the act ends after the one click.
- An action whose value the instruction did not give (``Action.missing_arguments``) runs only
  once ``variables=`` gives it: else a typed :class:`UnknownVariableError` saying so.
- Every action runs through :mod:`._heal`: identity check first, self-heal when it fails, and
  cache replay with no model call.
- Near misses in the model's answer (:mod:`._near_misses`) are corrected where the page decides
  them, else re-asked once with the valid choices; ``ActResult.repairs`` lists them all (those
  whose answer was left out too), and the inference log has them beside the requests.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from .._actions import Dispatches, Plan
from .._cache import ElementIdentity
from .._errors import UnknownVariableError
from .._prompts.act import ActAnswer, act_system, act_user, dropdown_user
from .._prompts.common import Fence, page_fence
from .._secrets import VariableSet
from .._session import OperationContext
from .._types import Action, ActResult, Repair
from ._answers import VALUE_ARGUMENTS, AnswerCheck, as_instruction_gives, note_repairs, without_repairs
from ._heal import plan_in, plan_on, planned, remember, replay, run_plan
from ._pipeline import (
    PageRead,
    Question,
    VisionMode,
    ask_parts,
    check_vision,
    look,
    model_sees,
    new_lines,
    read_page,
    require_sight,
    split_page,
)
from .observe import MAX_PARTS

__all__ = ["act_action", "act_instruction", "require_values"]

logger = logging.getLogger("stagehand_py._operations")


def require_values(action: Action, variables: VariableSet) -> None:
    """Refuse, before the browser, an action whose value the instruction never gave and the
    caller has not given either (``Action.missing_arguments`` not in ``variables``)."""
    missing = [name for name in action.missing_arguments if name not in variables]
    if not missing:
        return
    what = VALUE_ARGUMENTS.get(action.method, "value")
    raise UnknownVariableError(
        f"{action.method} on {action.description or action.selector!r} has no {what}: the instruction gave none, "
        f"so its argument is the placeholder {', '.join(f'%{m}%' for m in missing)}. Pass a value for it, e.g. "
        f"act(action, variables={{{missing[0]!r}: ...}}), or act on an Action whose arguments hold the value or a "
        "%placeholder% of yours.",
        missing=missing, available=variables.names,
    )


async def act_action(ctx: OperationContext, action: Action, element: ElementIdentity | None = None) -> ActResult:
    """Run ``action``, checked against ``element`` (or what this tab planned it on), healed if need be."""
    require_values(action, ctx.variables)
    dispatches = Dispatches()
    plan, healed = await run_plan(ctx, planned(ctx, action, element), dispatches)
    remember(ctx, [plan])
    ran = plan.action
    return ActResult(
        success=True,
        message=f"{ran.method} on {ran.description or ran.selector}: done" + (" (healed)" if healed else ""),
        description=ran.description,
        actions=[ran],
        healed=healed,
        dispatched=dispatches.sent,
        elements=[plan.identity],
    )


def _checker(ctx: OperationContext, page: PageRead, variables: Mapping[str, str], *, instruction: str | None = None,
             missing_values: bool = False) -> AnswerCheck:
    """The answer check for one read of the page (near misses re-asked once per read)."""
    return AnswerCheck(page.snapshot, variables, instruction=instruction, missing_values=missing_values,
                       fence=page_fence(ctx.page, page.text), redact=ctx.variables.redact)


async def _plan(ctx: OperationContext, instruction: str, page: PageRead, variables: Mapping[str, str],
                vision: VisionMode, sees: bool, choice: bool) -> tuple[Plan | None, bool, list[Repair]]:
    """One planned action for ``instruction`` (with the element it was chosen on), whether the
    model says its click opens options, and the near misses that made no action (``choice``:
    the client answers in choice mode)."""
    checker = _checker(ctx, page, variables, instruction=instruction, missing_values=True)

    def prompt(fence: Fence, outline: str, part: tuple[int, int] | None) -> tuple[str, str]:
        return act_system(fence), act_user(instruction, outline, fence, variables=variables, part=part)

    def check(out: ActAnswer) -> tuple[list[str], tuple[list[Plan], bool]]:
        problems, actions = checker(out.elements[:1], out.offered)
        plans = [plan_on(checker.record_of(a), a, ctx.variables) for a in as_instruction_gives(actions, instruction)]
        return problems, (plans, out.opens_options and not _completes_itself(plans))

    parts = split_page(ctx, page.text, prompt, ActAnswer, rank_by=instruction, choice=choice, elements=True)
    answers = await ask_parts(ctx, page, parts, Question(prompt, ActAnswer, check), purpose="act",
                              done=lambda found: bool(found[0]), limit=MAX_PARTS, vision=vision, sees=sees,
                              elements=True, instruction=instruction)
    if not answers or not answers[-1][0]:
        return None, False, checker.left_out
    plans, opens = answers[-1]
    return plans[0], opens and plans[0].action.method == "click", checker.left_out


#: Roles whose click is the whole act: it sets the element's own state and opens no options (a
#: small model says a checkbox opens some; a second step would then click what changed after it).
_COMPLETE_ON_CLICK = frozenset({"checkbox", "radio", "switch", "tab", "menuitemcheckbox", "menuitemradio", "option"})


def _completes_itself(plans: list[Plan]) -> bool:
    """Whether the planned click is on an element whose click opens nothing (:data:`_COMPLETE_ON_CLICK`)."""
    return bool(plans) and plans[0].identity is not None and plans[0].identity.role in _COMPLETE_ON_CLICK


def _without(text: str, eid: str | None) -> str:
    """``text`` without the outline line of element ``eid`` (its children stay)."""
    if eid is None:
        return text
    return "\n".join(line for line in text.split("\n") if not line.lstrip(" ").startswith(f"[{eid}]"))


async def _pick_option(ctx: OperationContext, instruction: str, clicked: Action, before: str,
                       variables: Mapping[str, str], choice: bool) -> Plan | None:
    """Second step of a two-step control: choose among the lines that appeared or changed after
    the click, never the element just clicked (a second click would close the list, flip the
    sort order back or untick the box). None when nothing new appeared or nothing fits."""
    page = await read_page(ctx)
    opener = page.snapshot.id_of(clicked.selector)
    appeared = new_lines(before, _without(page.text, opener))
    if not appeared.strip():
        logger.info("act %r: the click on %s made nothing new appear; nothing more to choose", instruction,
                    clicked.selector)
        return None

    def prompt(fence: Fence, outline: str, part: tuple[int, int] | None) -> tuple[str, str]:
        return act_system(fence), dropdown_user(instruction, clicked.description, outline, fence, variables=variables)

    checker = _checker(ctx, page, variables)

    def check(out: ActAnswer) -> tuple[list[str], list[Action]]:
        problems, found = checker(out.elements[:1], out.offered)
        if any(action.selector == clicked.selector for action in found):
            return [f"elements[0] is {clicked.description or 'the element'!r}, which was just clicked to show these "
                    "elements; clicking it again would undo that. Choose one of the new elements shown."], []
        return problems, found

    parts = split_page(ctx, appeared, prompt, ActAnswer, rank_by=instruction, choice=choice)
    answers = await ask_parts(ctx, page, parts, Question(prompt, ActAnswer, check), purpose="act",
                              done=lambda found: True, limit=1, elements=True, instruction=instruction)
    found = answers[0][:1] if answers else []
    return plan_in(page.snapshot, found[0], ctx.variables) if found else None


async def act_instruction(ctx: OperationContext, instruction: str, vision: VisionMode = "auto") -> ActResult:
    check_vision(vision, "act")
    descriptions = ctx.variables.descriptions
    key = None
    if ctx.cache is not None:
        key = ctx.cache.key("act", instruction, ctx.page.url, descriptions)
        cached = ctx.cache.load_entry(key)
        if cached is not None and cached.actions:
            return await replay(ctx, key, instruction, cached)
    client = ctx.model()  # a clear ConfigurationError before touching the page
    if vision is True:
        require_sight(client, "act(vision=True)")
    sees = vision is not False and model_sees(client)
    looked = await look(ctx, lambda page: _plan(ctx, instruction, page, descriptions, vision, sees, client.choice_mode),
                        found=lambda planned: planned[0] is not None, confidence=vision == "auto" and sees)
    (plan, opens, left_out), page = looked.value, looked.page
    repairs = [*(plan.action.repairs if plan is not None else []), *left_out]
    await note_repairs(client, "act", repairs)
    if plan is None:
        logger.info("act %r: no element fits", instruction)
        waited = f" (after waiting {looked.waited:.1f} s for the page to change)" if looked.waited else ""
        missed = "".join(f" The model answered {r.answered}: {r.done}." for r in left_out)
        return ActResult(success=False, message=f"No element on the page can carry out {instruction!r}{waited}.{missed}",
                         waited=looked.waited, repairs=repairs)
    require_values(plan.action, ctx.variables)
    dispatches = Dispatches()
    url = ctx.page.url
    ran, healed = await run_plan(ctx, plan, dispatches)  # the page may have changed meanwhile
    done = [ran]
    if opens and ctx.page.url != url:
        # The click loaded another page: it opened no options (a small model says so of a filter link).
        logger.info("act %r: the click on %s loaded %s; no options to choose", instruction, ran.action.selector,
                    ctx.variables.redact(ctx.page.url))  # a GET form puts typed values in the URL
        opens = False
    if opens:
        option = await _pick_option(ctx, instruction, ran.action, page.text, descriptions, client.choice_mode)
        if option is None:
            # The click ran; it is not repeated (that would undo it), and no second step fits.
            remember(ctx, done)
            return ActResult(success=False, message=f"Clicked {ran.action.description!r}, but nothing that appeared "
                             f"after it fits {instruction!r}; it was not clicked again.",
                             description=ran.action.description, actions=[ran.action], healed=healed,
                             dispatched=dispatches.sent, repairs=repairs, elements=[ran.identity])
        await note_repairs(client, "act", option.action.repairs)
        repairs.extend(option.action.repairs)
        # Chosen from the read just made after the click: run as found (no second identity check).
        ran2, healed2 = await run_plan(ctx, Plan(option.action, element_id=option.element_id), dispatches)
        done.append(ran2 if healed2 else option)
        healed = healed or healed2
    remember(ctx, done)
    if key is not None:
        ctx.cache.store(key, without_repairs([p.action for p in done]), [p.identity for p in done])
    return ActResult(success=True, message=f"{instruction}: done", description=done[-1].action.description,
                     actions=[p.action for p in done], healed=healed, dispatched=dispatches.sent, repairs=repairs,
                     elements=[p.identity for p in done])
