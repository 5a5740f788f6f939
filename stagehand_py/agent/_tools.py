"""Tools: the built-in browser and bookkeeping tools, user tools from typed functions, and the
per-step answer schema (reflection fields plus one tool call, a union tagged by ``tool``)."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, Union, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, create_model

from .._errors import InvalidArgumentError
from .._prompts.agent import MORE_ACTIONS_DESCRIPTION, TOOL_DESCRIPTIONS
from .._types import Action, ActionMethod, ActResult
from .._vision import masked_screenshot
from ._recording import RecordedStep, recorded_data

if TYPE_CHECKING:
    from ._run import Run

__all__ = ["SCROLL_DID_NOT_MOVE", "TERMINAL_TOOLS", "Tool", "ToolOutcome", "builtin_tools", "step_model", "tool_from_function"]

TERMINAL_TOOLS = ("done", "fail")
#: How a scroll that moved nothing begins its result (the choice step stops offering it).
SCROLL_DID_NOT_MOVE = "the page did not move"


@dataclass
class ToolOutcome:
    """What a tool did. ``text`` is what the model reads next step (it may quote the page)."""

    ok: bool
    text: str
    data: Any = None
    error: BaseException | None = None
    image: bytes | None = None
    #: ``text`` is data the tool read (a caller's tool's result): a value ``done`` reports may
    #: come from it, as from a page.
    read: bool = False


@dataclass(frozen=True)
class Tool:
    """A tool the model may call. ``browser`` tools run one at a time per page.

    ``run`` gets the run's state (:class:`._run.Run`: the driver, the variables, the books) and
    the validated arguments; a tool raises on failure or returns ``ok=False`` with the reason."""

    name: str
    description: str
    args_model: type[BaseModel]
    run: Callable[[Run, Any], Awaitable[ToolOutcome]]
    browser: bool = True


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- argument models -----------------------------------------------------------------------


class ActArgs(_Args):
    element_id: str | None = Field(default=None, description="Element id from the outline (in brackets at the start of its line)")
    method: ActionMethod = Field(default="click", description="What to do to the element")
    arguments: list[str] = Field(default_factory=list, description="Method arguments, e.g. the text to fill; may be %placeholders%")
    instruction: str | None = Field(default=None, description="Only when no element_id fits: what to do, in words")


class FormField(_Args):
    element_id: str | None = Field(default=None, description="Element id from the outline (preferred)")
    label: str | None = Field(default=None, description="The field's label when there is no id")
    value: str = Field(description="The value, or a %placeholder% for a secret")


class FillFormArgs(_Args):
    fields: list[FormField] = Field(min_length=1)


class ExtractArgs(_Args):
    instruction: str
    schema_: dict[str, Any] | None = Field(default=None, alias="schema", description="JSON Schema of the result (optional)")


class GotoArgs(_Args):
    url: str


class NoArgs(_Args):
    pass


class ScrollArgs(_Args):
    direction: Literal["up", "down"] = "down"
    pages: float = Field(default=1.0, gt=0, le=10, description="How many viewport heights")
    element_id: str | None = Field(default=None, description="A scrollable element; the page when omitted")


class PressKeysArgs(_Args):
    keys: str = Field(description="A key or chord, e.g. 'Enter' or 'Control+A'")


class WaitArgs(_Args):
    seconds: float = Field(default=1.0, ge=0, le=10)


class OutlineArgs(_Args):
    part: int = Field(default=1, ge=1)


class ThinkArgs(_Args):
    thought: str


class SaveProgressArgs(_Args):
    data: dict[str, Any] = Field(description="Data collected so far; merged into earlier saves")


class FailArgs(_Args):
    reason: str


class TabArgs(_Args):
    index: int = Field(ge=0, description="The tab's number in list_tabs")


class CloseTabArgs(_Args):
    index: int | None = Field(default=None, ge=0, description="The tab's number in list_tabs; the current tab when omitted")


@runtime_checkable
class TabDriver(Protocol):
    """A driver with tabs (:class:`stagehand_py.Stagehand` is one): what the tab tools need."""

    @property
    def pages(self) -> list[Any]: ...

    async def switch_to_page(self, page: Any) -> None: ...

    async def close_page(self, page: Any = None) -> None: ...


def done_args_model(output_schema: dict[str, Any] | None) -> type[BaseModel]:
    """``done``'s arguments; ``output`` shows the caller's schema to the model but accepts any
    JSON here, so that a wrong output is bounced with a clear message by the loop (costing a
    step) instead of failing the whole answer."""
    if output_schema is None:
        return create_model("DoneArgs", __base__=_Args, message=(str, ...), output=(Any, None))
    shown = Annotated[Any, WithJsonSchema(output_schema)]
    return create_model("DoneArgs", __base__=_Args, message=(str, ...), output=(shown, ...))


# --- user tools ------------------------------------------------------------------------------


def tool_from_function(fn: Callable[..., Any], *, name: str | None = None, description: str | None = None) -> Tool:
    """A tool from a typed Python function (sync or async).

    The parameters become the arguments (their annotations and defaults are the schema); the
    docstring is the description. A parameter annotated with ``Stagehand`` (or named
    ``stagehand``) receives the agent's Stagehand (its driver), which makes it a browser tool; any other
    tool is pure and does not wait for the browser. The return value is shown to the model
    (as JSON when it is not a string).
    """
    tool_name = name or fn.__name__
    if not tool_name.isidentifier() or tool_name in TOOL_DESCRIPTIONS:
        raise InvalidArgumentError(
            f"tool name {tool_name!r} must be an identifier that is not a built-in tool ({', '.join(TOOL_DESCRIPTIONS)})."
        )
    sig = inspect.signature(fn)
    hints = inspect.get_annotations(fn, eval_str=True)
    fields: dict[str, Any] = {}
    inject: str | None = None
    for pname, param in sig.parameters.items():
        annotation = hints.get(pname, inspect.Parameter.empty)
        # The driver is recognised by a class marker, not imported: the agent must not import its
        # caller (Stagehand imports the agent).
        if getattr(annotation, "_is_agent_driver", False) is True or pname == "stagehand":
            inject = pname
            continue
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise InvalidArgumentError(f"tool {tool_name!r}: *args/**kwargs cannot be described to a model; name every parameter.")
        if annotation is inspect.Parameter.empty:
            raise InvalidArgumentError(f"tool {tool_name!r}: parameter {pname!r} needs a type annotation.")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[pname] = (annotation, default)
    args_model = create_model(f"{tool_name}_args", __base__=_Args, **fields)
    text = description or inspect.getdoc(fn) or f"Call {tool_name}."

    async def run(run_: Run, args: BaseModel) -> ToolOutcome:
        kwargs = {k: getattr(args, k) for k in fields}
        if inject is not None:
            kwargs[inject] = run_.driver
            run_.unreplayable = f"it called the browser tool {tool_name!r}, whose effect is not recorded"
        value = fn(**kwargs)
        if inspect.isawaitable(value):
            value = await value
        shown = value if isinstance(value, str) else json.dumps(value, default=str)
        return ToolOutcome(ok=True, text=shown, data=value, read=True)

    return Tool(tool_name, text, args_model, run, browser=inject is not None)


# --- built-in tools ----------------------------------------------------------------------------


async def _act(run: Run, args: ActArgs) -> ToolOutcome:
    if args.element_id:
        xpath = run.xpath_for(args.element_id)
        action = Action(selector=f"xpath={xpath}", method=args.method, arguments=list(args.arguments),
                        description=run.line_for(args.element_id))
        result = await run.execute_action(action)
        return ToolOutcome(ok=True, text=f"{args.method} on [{args.element_id}] done." + _downloads_note(run, result))
    if args.instruction:
        result = await run.driver.act(args.instruction, variables=run.variables.given or None)
        run.record_acts(result)
        return ToolOutcome(ok=bool(result.success), text=result.message + _downloads_note(run, result))
    raise InvalidArgumentError("act needs element_id (from the outline) or an instruction.")


def _downloads_note(run: Run, result: ActResult) -> str:
    """What the action made the page download, so the model knows the file arrived."""
    if not result.downloads:
        return ""
    files = "; ".join(f"{d.suggested_filename} ({d.size} bytes, sha256 {d.sha256[:12]})" for d in result.downloads)
    return " " + run.redact(f"Downloaded: {files}.")


async def _fill_form(run: Run, args: FillFormArgs) -> ToolOutcome:
    done: list[str] = []
    by_label = [f for f in args.fields if not f.element_id]
    for f in args.fields:
        if f.element_id:
            xpath = run.xpath_for(f.element_id)
            await run.execute_action(Action(selector=f"xpath={xpath}", method="fill", arguments=[f.value]))
            done.append(f"[{f.element_id}]")
    if by_label:
        # One observe for all labelled fields, then one act per returned action.
        wanted = "; ".join(f"fill the field '{f.label}' with {f.value}" for f in by_label)
        actions = await run.driver.observe(wanted, variables=run.variables.given or None)
        if not actions:
            raise InvalidArgumentError(f"no form fields found for: {', '.join(str(f.label) for f in by_label)}")
        for action in actions:
            run.record_acts(await run.driver.act(action, variables=run.variables.given or None))
            done.append(action.description or action.selector)
    return ToolOutcome(ok=True, text=f"filled {len(done)} field(s): {', '.join(done)}")


async def _extract(run: Run, args: ExtractArgs) -> ToolOutcome:
    value = await run.driver.extract(args.instruction, args.schema_)
    data = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    run.extractions.append(data)
    run.recorded.append(recorded_data(run, "extract", data, instruction=args.instruction, schema=args.schema_))
    return ToolOutcome(ok=True, text=json.dumps(data, default=str), data=data)


async def _goto(run: Run, args: GotoArgs) -> ToolOutcome:
    run.check_url_allowed(args.url)
    response = await run.driver.page.goto(args.url, wait_until="load")
    run.recorded.append(RecordedStep(kind="goto", url=run.redact(args.url)))
    status = f" (HTTP {response.status})" if response is not None else ""
    return ToolOutcome(ok=response is None or response.ok, text=f"opened {run.driver.page.url}{status}")


async def _back(run: Run, args: NoArgs) -> ToolOutcome:
    response = await run.driver.page.go_back(wait_until="load")
    if response is None and run.driver.page.url == run.last_url:
        return ToolOutcome(ok=False, text="there is no previous page in this tab")
    run.recorded.append(RecordedStep(kind="back"))
    return ToolOutcome(ok=True, text=f"back at {run.driver.page.url}")


async def _scroll(run: Run, args: ScrollArgs) -> ToolOutcome:
    page = run.driver.page
    sign = -1 if args.direction == "up" else 1
    before = await page.evaluate("() => Math.round(window.scrollY)")
    if args.element_id:
        xpath = run.xpath_for(args.element_id)
        height = await page.evaluate("() => window.innerHeight")
        await run.execute_action(Action(selector=f"xpath={xpath}", method="scroll_by",
                                        arguments=["0", str(int(sign * args.pages * height * 0.8))]))
    else:
        await page.evaluate("([s, p]) => window.scrollBy(0, s * p * window.innerHeight * 0.8)", [sign, args.pages])
    y = await page.evaluate("() => Math.round(window.scrollY)")
    if not args.element_id and y != before:  # an element scroll ran through execute_action: recorded there
        run.recorded.append(RecordedStep(kind="scroll", pixels=int(y) - int(before)))
    if y == before and not args.element_id:  # said plainly: a model otherwise keeps scrolling
        return ToolOutcome(ok=True, text=f"{SCROLL_DID_NOT_MOVE} (scrollY {y}): the page is at its "
                                          f"{'top' if sign < 0 else 'end'}; everything is already in the outline")
    return ToolOutcome(ok=True, text=f"scrolled {args.direction}; page scrollY is now {y}")


async def _press(run: Run, args: PressKeysArgs) -> ToolOutcome:
    await run.driver.page.keyboard.press(args.keys)
    run.recorded.append(RecordedStep(kind="press", keys=args.keys))
    return ToolOutcome(ok=True, text=f"pressed {args.keys}")


async def _wait(run: Run, args: WaitArgs) -> ToolOutcome:
    await asyncio.sleep(args.seconds)
    return ToolOutcome(ok=True, text=f"waited {args.seconds:g} s")


async def _screenshot(run: Run, args: NoArgs) -> ToolOutcome:
    data = await masked_screenshot(run.driver.page, run.variables, type="png")
    record = run.record_screenshot(data)
    return ToolOutcome(ok=True, text=f"screenshot taken (sha256 {record.sha256[:16]}); you see it below", image=data)


async def _outline(run: Run, args: OutlineArgs) -> ToolOutcome:
    chunks = run.outline_chunks
    if not chunks or args.part > len(chunks):
        return ToolOutcome(ok=False, text=f"there is no part {args.part}; the outline has {len(chunks)} part(s)")
    return ToolOutcome(ok=True, text=f"outline part {args.part} of {len(chunks)}:\n{chunks[args.part - 1]}")


async def _think(run: Run, args: ThinkArgs) -> ToolOutcome:
    return ToolOutcome(ok=True, text="noted")


async def _save_progress(run: Run, args: SaveProgressArgs) -> ToolOutcome:
    await run.save_progress(args.data)
    return ToolOutcome(ok=True, text=f"saved; collected data now has keys {sorted(run.data or {})}")


def _tabs_of(run: Run) -> TabDriver:
    if not isinstance(run.driver, TabDriver):
        raise InvalidArgumentError(f"this browser driver ({type(run.driver).__name__}) has no tabs to list or switch.")
    return run.driver


#: Longest tab title shown (titles are page text: bounded, like every page text the model reads).
_TITLE_CHARS = 80


async def _list_tabs(run: Run, args: NoArgs) -> ToolOutcome:
    driver = _tabs_of(run)
    current = run.driver.page
    lines = []
    for index, page in enumerate(driver.pages):
        title = (await page.title())[:_TITLE_CHARS]
        lines.append(f"tab {index}{' (current)' if page is current else ''}: {title!r} {page.url}")
    return ToolOutcome(ok=True, text="\n".join(lines))


async def _switch_tab(run: Run, args: TabArgs) -> ToolOutcome:
    driver = _tabs_of(run)
    pages = driver.pages
    if args.index >= len(pages):
        return ToolOutcome(ok=False, text=f"there is no tab {args.index}; {len(pages)} tab(s) are open")
    run.check_url_allowed(pages[args.index].url)
    await driver.switch_to_page(args.index)
    run.unreplayable = "it switched tabs (tab steps are not recorded)"
    return ToolOutcome(ok=True, text=f"now on tab {args.index}: {run.driver.page.url}")


async def _close_tab(run: Run, args: CloseTabArgs) -> ToolOutcome:
    driver = _tabs_of(run)
    pages = driver.pages
    if args.index is not None and args.index >= len(pages):
        return ToolOutcome(ok=False, text=f"there is no tab {args.index}; {len(pages)} tab(s) are open")
    await driver.close_page(args.index)
    run.unreplayable = "it closed a tab (tab steps are not recorded)"
    return ToolOutcome(ok=True, text=f"closed; now on {run.driver.page.url} ({len(driver.pages)} tab(s) open)")


async def _terminal(run: Run, args: Any) -> ToolOutcome:  # handled by the loop
    return ToolOutcome(ok=True, text="")


def builtin_tools(output_schema: dict[str, Any] | None) -> list[Tool]:
    """The DOM mode's tools. A new one (e.g. tab tools) is an args model, an async
    ``(run, args) -> ToolOutcome`` function reaching the browser through ``run.driver``, a
    description in ``_prompts.agent.TOOL_DESCRIPTIONS`` and an entry here."""
    d = TOOL_DESCRIPTIONS
    return [
        Tool("act", d["act"], ActArgs, _act),
        Tool("fill_form", d["fill_form"], FillFormArgs, _fill_form),
        Tool("extract", d["extract"], ExtractArgs, _extract),
        Tool("goto", d["goto"], GotoArgs, _goto),
        Tool("navigate_back", d["navigate_back"], NoArgs, _back),
        Tool("scroll", d["scroll"], ScrollArgs, _scroll),
        Tool("press_keys", d["press_keys"], PressKeysArgs, _press),
        Tool("wait", d["wait"], WaitArgs, _wait, browser=False),
        Tool("screenshot", d["screenshot"], NoArgs, _screenshot),
        Tool("list_tabs", d["list_tabs"], NoArgs, _list_tabs),
        Tool("switch_tab", d["switch_tab"], TabArgs, _switch_tab),
        Tool("close_tab", d["close_tab"], CloseTabArgs, _close_tab),
        Tool("outline", d["outline"], OutlineArgs, _outline, browser=False),
        Tool("think", d["think"], ThinkArgs, _think, browser=False),
        Tool("save_progress", d["save_progress"], SaveProgressArgs, _save_progress, browser=False),
        Tool("done", d["done"], done_args_model(output_schema), _terminal, browser=False),
        Tool("fail", d["fail"], FailArgs, _terminal, browser=False),
    ]


# --- the step answer ---------------------------------------------------------------------------


class _StepBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    evaluation_previous_step: str = Field(description="Did the previous step work? How do you know?")
    memory: str = Field(description="What to remember: progress so far, data seen, what remains")
    next_goal: str = Field(description="What this step's action is for")

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        # The tagged union is sent as anyOf (OpenAI's strict mode rejects oneOf); validation
        # still dispatches on the tag.
        schema: dict[str, Any] = _one_of_to_any_of(super().model_json_schema(*args, **kwargs))
        return schema


def _one_of_to_any_of(node: Any) -> Any:
    if isinstance(node, dict):
        out = {("anyOf" if k == "oneOf" else k): _one_of_to_any_of(v) for k, v in node.items() if k != "discriminator"}
        return out
    if isinstance(node, list):
        return [_one_of_to_any_of(v) for v in node]
    return node


def _call_union(tools: Sequence[Tool]) -> Any:
    calls = [
        create_model(
            f"call_{t.name}",
            __base__=_Args,
            tool=(Literal[t.name], ...),  # type: ignore[arg-type]  # a Literal built at run time
            args=(t.args_model, ...),
        )
        for t in tools
    ]
    return calls[0] if len(calls) == 1 else Annotated[Union[tuple(calls)], Field(discriminator="tool")]  # noqa: UP007


def step_model(tools: Sequence[Tool], *, extra_fields: dict[str, Any] | None = None, more_actions: int = 0) -> type[BaseModel]:
    """The answer schema for one step offering exactly ``tools``.

    With ``more_actions`` > 0 (multi-action steps) the answer may chain up to that many further
    non-terminal calls in ``more_actions`` after ``action``.
    """
    fields = dict(extra_fields or {})
    chainable = [t for t in tools if t.name not in TERMINAL_TOOLS]
    if more_actions > 0 and chainable:
        fields["more_actions"] = (
            list[_call_union(chainable)],  # type: ignore[misc]
            Field(default_factory=list, max_length=more_actions, description=MORE_ACTIONS_DESCRIPTION),
        )
    return create_model("agent_step", __base__=_StepBase, action=(_call_union(tools), ...), **fields)


@dataclass
class ToolSet:
    """The tools of one run by name, and which are offered at a step."""

    tools: dict[str, Tool] = field(default_factory=dict)

    def offered(self, *, finish_only: bool) -> list[Tool]:
        if finish_only:
            return [self.tools[n] for n in TERMINAL_TOOLS]
        return list(self.tools.values())
