"""Computer use with the provider's own tool.

With an ``anthropic/...`` model the agent offers Anthropic's ``computer`` tool and reads its
``tool_use`` blocks, answering each with a ``tool_result`` that carries the next screenshot;
with an ``openai/computer-use...`` model it talks to the Responses API (``computer_call`` in,
``computer_call_output`` with the screenshot out, continued by ``previous_response_id``) and
hands every ``pending_safety_check`` to the caller's ``on_safety_check`` before the action runs,
acknowledging the approved ones. Native actions are translated into the internal protocol
(:mod:`._actions`) and run by the same tools as the test-double path, so coordinates are scaled
between screenshot and viewport in one place. The model ends the task by answering without a
tool call; when the caller asked for ``output``, one structured call turns that answer (and the
saved data) into it, and ``done``'s usual checks apply.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Literal

from ...._errors import InvalidArgumentError, StagehandError
from ...._prompts import agent as P
from ...._prompts.common import Fence
from ....llm import (
    AssistantMessage,
    ComputerTool,
    ImagePart,
    LLMClient,
    Message,
    SystemMessage,
    TextPart,
    ToolMessage,
    ToolResultPart,
    UserMessage,
)
from ....llm._messages import PendingSafetyCheck, ToolCallPart
from ..._run import Finished, PageState, Run
from ..._step import ask_model
from ..._tool_calls import record_step, run_tool, safety_checks, terminal
from ..._tools import ToolOutcome, ToolSet, done_args_model
from ..._types import SafetyCheck
from ._actions import CuaAction, from_anthropic, from_openai

if TYPE_CHECKING:
    from ._mode import CuaMode

__all__ = ["NativeComputerUse", "NativeProvider", "native_provider"]

logger = logging.getLogger("stagehand_py")

NativeProvider = Literal["anthropic", "openai"]

#: Screenshots kept in the Anthropic history (older ones are replaced by a note).
_KEEP_SCREENSHOTS = 3
_DROPPED = "(an older screenshot, removed to keep the conversation small)"


def native_provider(client: LLMClient) -> NativeProvider | None:
    """Which provider's own computer tool the client's model speaks, if any.

    Anthropic models use it; OpenAI models only when they are computer-use models (the chat
    models cannot take ``computer_use_preview``). Test doubles and other models use the
    internal protocol through structured output.
    """
    from ....llm._providers._common import HTTPProviderModel

    model = client.model
    if not isinstance(model, HTTPProviderModel):
        return None
    if model.provider == "anthropic":
        return "anthropic"
    if model.provider == "openai" and "computer-use" in model.model_name:
        return "openai"
    return None


@dataclass
class _Pending:
    """An executed tool call waiting for its result (sent with the next screenshot)."""

    call_id: str
    text: str
    is_error: bool
    acknowledged: tuple[PendingSafetyCheck, ...] = ()


@dataclass
class _Session:
    """The conversation of one run."""

    history: list[Message] = field(default_factory=list)  # Anthropic: every turn so far
    previous_id: str | None = None  # OpenAI: the stored conversation
    pending: list[_Pending] = field(default_factory=list)
    feedback: list[str] = field(default_factory=list)  # e.g. a bounced final answer
    started: bool = False


class NativeComputerUse:
    """One step of the native computer-use loop (called by the agent loop after the capture)."""

    def __init__(self, provider: NativeProvider, mode: CuaMode) -> None:
        self.provider = provider
        self.mode = mode

    def _translate(self, call: ToolCallPart) -> CuaAction:
        if call.name != "computer":
            raise InvalidArgumentError(f"the model called an unknown tool {call.name!r}; only the computer tool is offered.")
        return from_anthropic(call.arguments) if self.provider == "anthropic" else from_openai(call.arguments)

    def _new_input(self, run: Run, session: _Session, state: PageState, notices: list[str]) -> list[Message]:
        screenshot = ImagePart(data=state.images[0], media_type="image/png")
        status = P.cua_native_status(step=run.step, max_steps=run.max_steps, url=run.redact(state.url),
                                     notices=[*session.feedback, *notices])
        if not session.started:
            task = P.task_message(run.instruction, variables=run.variables.descriptions, max_steps=run.max_steps)
            return [UserMessage([TextPart(text=task), TextPart(text=status), screenshot])]
        results: list[ToolResultPart] = []
        for index, pending in enumerate(session.pending):
            last = index == len(session.pending) - 1
            # Every OpenAI computer_call needs its screenshot; Anthropic gets it on the last result only.
            if self.provider == "openai":
                content: tuple[TextPart | ImagePart, ...] = (screenshot,)
            else:
                content = (TextPart(text=pending.text), screenshot) if last else (TextPart(text=pending.text),)
            results.append(ToolResultPart(tool_call_id=pending.call_id, content=content, is_error=pending.is_error,
                                          acknowledged_safety_checks=pending.acknowledged))
        messages: list[Message] = [ToolMessage(results)] if results else []
        if self.provider == "openai" or not results:
            messages.append(UserMessage([TextPart(text=status)] + ([] if results else [screenshot])))
        else:  # Anthropic: the status joins the tool results' user turn
            messages.append(UserMessage(status))
        return messages

    async def step(self, run: Run, toolset: ToolSet, state: PageState, notices: list[str]) -> None:
        session: _Session = run.mode_state if isinstance(run.mode_state, _Session) else _Session()
        run.mode_state = session
        geometry = self.mode.geometry
        assert geometry is not None, "capture() runs before the step"
        tool = ComputerTool(display_width=geometry.screen_width, display_height=geometry.screen_height)
        system = SystemMessage(P.cua_native_system_prompt(extra=run.config.system_prompt))
        new = self._new_input(run, session, state, notices)
        if self.provider == "anthropic":
            conversation = [*session.history, *new]
            _drop_old_screenshots(conversation)
            messages: list[Message] = [system, *conversation]
        else:
            messages = [system, *new]
        run.last_messages = [{"role": m.role, "content": run.redact(_describe(m))} for m in messages]

        client = run.client
        answer = await ask_model(run, state, lambda: client.turn(
            messages, tools=[tool], purpose="agent", previous_response_id=session.previous_id, secrets=run.variables.secret_values()))
        if answer is None:  # a failed step; the pending results go with the next screenshot
            return
        session.started = True
        session.pending = []
        session.feedback = []
        session.previous_id = answer.response_id
        if self.provider == "anthropic":
            reply: list[TextPart | ToolCallPart] = [*([TextPart(text=answer.text)] if answer.text else []),
                                                    *answer.tool_calls]
            session.history = [*conversation, *([AssistantMessage(reply)] if reply else [])]
        run.usage = run.usage + answer.usage
        await run.emit("model_usage", answer.usage.model_dump(mode="json"))
        said = run.redact(answer.text or "")
        if said:
            run.memory = said[:2000]
        reflection = SimpleNamespace(evaluation_previous_step="", memory=run.memory, next_goal=said[:500])

        if not answer.tool_calls:
            await self._finish(run, toolset, state, reflection, said)
            return
        for call in answer.tool_calls:
            try:
                action = self._translate(call)
            except InvalidArgumentError as exc:
                outcome = ToolOutcome(ok=False, text=f"InvalidArgumentError: {exc}", error=exc)
                await record_step(run, state, reflection, "computer", call.arguments, outcome)
                session.pending.append(_Pending(call.id, outcome.text, is_error=True))
                run.failures.failure("logic")
                continue
            acknowledged: tuple[PendingSafetyCheck, ...] = ()
            if call.safety_checks:
                # Raises (needs_review) unless the caller approves every check.
                await safety_checks(run, [SafetyCheck(id=c.id, code=c.code or "", message=c.message or "")
                                           for c in call.safety_checks])
                acknowledged = call.safety_checks
            await run.emit("tool_call", {"tool": action.tool, "args": action.args, "next_goal": said[:500],
                                         "native": call.arguments})
            logger.info("agent step %d/%d: computer %s -> %s", run.step, run.max_steps,
                        call.arguments.get("action") or call.arguments.get("type"), action.tool)
            if action.tool == "screenshot":
                outcome = ToolOutcome(ok=True, text="screenshot taken")
                await record_step(run, state, reflection, "screenshot", {}, outcome)
            else:
                spec = toolset.tools[action.tool]
                outcome = await run_tool(run, toolset, state, reflection, action.tool, spec.args_model.model_validate(action.args))
            session.pending.append(_Pending(call.id, outcome.text, is_error=not outcome.ok, acknowledged=acknowledged))

    async def _finish(self, run: Run, toolset: ToolSet, state: PageState, reflection: Any, said: str) -> None:
        """The model answered without a tool call: the task is over (done, or failed when the
        answer says so). ``done``'s checks apply; a bounced answer goes back to the model."""
        if said.lstrip().upper().startswith("FAILED"):
            reason = said.lstrip()[len("FAILED"):].lstrip(":- ").strip() or "the model gave up"
            await record_step(run, state, reflection, "fail", {"reason": reason}, ToolOutcome(ok=True, text=reason))
            raise Finished("failed", reason, output=run.collected(), success=False)
        output: Any = None
        if run.output is not None:
            output = await self._structured_output(run, said, state)
        args = done_args_model(run.output_schema).model_validate({"message": said or "done", "output": output})
        before = len(run.steps)
        await terminal(run, reflection, "done", args, state)
        # Still here: the answer was bounced (invalid output or a failed self-check).
        run.mode_state.feedback = [s.result for s in run.steps[before:]]

    async def _structured_output(self, run: Run, said: str, state: PageState) -> Any:
        fence = Fence()
        system, user = P.cua_final_output_messages(run.instruction, said, run.collected(), fence,
                                                   output_schema=run.output_schema)
        try:
            generated = await run.client.generate(
                [SystemMessage(system), UserMessage([TextPart(text=user), ImagePart(data=state.images[0])])],
                purpose="agent_output", output=run.output, secrets=run.variables.secret_values(),
            )
        except StagehandError as exc:
            logger.warning("agent: the final output call failed (%s); done is checked without it", type(exc).__name__)
            return None
        run.usage = run.usage + generated.usage
        output = generated.output
        return output.model_dump(mode="json") if hasattr(output, "model_dump") else output


def _describe(message: Message) -> str:
    texts: list[str] = []
    for part in message.content:
        if isinstance(part, TextPart):
            texts.append(part.text)
        elif isinstance(part, ImagePart):
            texts.append(f"<image {part.media_type} {len(part.data)} bytes>")
        elif isinstance(part, ToolCallPart):
            texts.append(f"<{part.name} {part.arguments}>")
        elif isinstance(part, ToolResultPart):
            texts.append(f"<result of {part.tool_call_id}: {part.text} + {len(part.images)} image(s)>")
    return "\n".join(texts)


def _drop_old_screenshots(conversation: list[Message]) -> None:
    """Keep only the last few screenshots (each costs ~1,000+ input tokens), in place."""
    seen = 0
    for i in range(len(conversation) - 1, -1, -1):
        message = conversation[i]
        if isinstance(message, UserMessage):
            parts = []
            for part in message.content:
                if isinstance(part, ImagePart):
                    seen += 1
                    parts.append(part if seen <= _KEEP_SCREENSHOTS else TextPart(text=_DROPPED))
                else:
                    parts.append(part)
            conversation[i] = UserMessage(parts)
        elif isinstance(message, ToolMessage):
            results = []
            for result in message.content:
                if result.images:
                    seen += 1
                    if seen > _KEEP_SCREENSHOTS:
                        result = result.model_copy(update={"content": (TextPart(text=f"{result.text}\n{_DROPPED}"),)})
                results.append(result)
            conversation[i] = ToolMessage(results)
