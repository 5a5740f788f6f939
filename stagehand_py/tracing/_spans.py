"""The span wrappers the library calls at its few entry points: ``await traced_x(call, ...)``
in place of ``await call()``, so each insertion is one line.

With no OpenTelemetry API installed a wrapper just awaits the call. Nothing here runs at import time, and no state is kept
between calls: the tracer is looked up from the global provider the user configured, on every
span, so configuring OpenTelemetry after importing stagehand_py works.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Literal, TypeVar

from .._secrets import VariableSet

__all__ = [
    "MAX_TEXT_CHARS",
    "TRACER_NAME",
    "bounded_text",
    "traced_action",
    "traced_agent_run",
    "traced_agent_step",
    "traced_model_call",
    "traced_model_request",
    "traced_operation",
    "tracing_available",
]

#: The instrumentation scope of every span (``tracer_provider.get_tracer(TRACER_NAME)``).
TRACER_NAME = "stagehand_py"
#: Text attributes (instructions, URLs) are cut to this many characters after redaction.
MAX_TEXT_CHARS = 200

#: A selector worth recording: a positional XPath as observe() makes them. Anything else may be
#: a user's own selector holding text (``//button[text()='...']``), so it is left out.
_POSITIONAL_XPATH = re.compile(r"^xpath=(?:/{1,2}[A-Za-z][\w:-]*(?:\[\d+\])?)+$")

T = TypeVar("T")
AttributeValue = str | bool | int | float | tuple[str, ...]


def tracing_available() -> bool:
    """True when the OpenTelemetry API is installed (spans then go to its global provider)."""
    try:
        return importlib.util.find_spec("opentelemetry.trace") is not None
    except (ImportError, ValueError):  # no parent package, or an import blocked in sys.modules
        return False


def bounded_text(text: str, variables: VariableSet | None = None) -> str:
    """``text`` with variable values redacted to ``%name%``, then cut to :data:`MAX_TEXT_CHARS`."""
    redacted = variables.redact(text) if variables is not None else text
    return redacted if len(redacted) <= MAX_TEXT_CHARS else redacted[: MAX_TEXT_CHARS - 1] + "…"


class SpanHandle:
    """Sets attributes on the live span, or on nothing when tracing is off."""

    def __init__(self, span: Any = None) -> None:
        self._span = span

    @property
    def recording(self) -> bool:
        return self._span is not None and bool(self._span.is_recording())

    def set(self, key: str, value: AttributeValue | None) -> None:
        if value is not None and self._span is not None:
            self._span.set_attribute(key, list(value) if isinstance(value, tuple) else value)


def _tracer() -> Any:
    try:
        from opentelemetry import trace
    except ImportError:  # the otel extra is not installed: spans are no-ops
        return None
    return trace.get_tracer(TRACER_NAME)


@contextmanager
def _span(name: str, attributes: Mapping[str, AttributeValue | None], *,
          kind: Literal["internal", "client"] = "internal", describe_errors: bool = False,
          variables: VariableSet | None = None) -> Iterator[SpanHandle]:
    """A span; a failure sets ``error.type``, and with ``describe_errors`` the error's message
    (redacted with ``variables``, bounded) -- only for errors of our own, whose messages are
    written to be safe: a Playwright or provider error may quote what was typed or sent."""
    tracer = _tracer()
    if tracer is None:
        yield SpanHandle()
        return
    from opentelemetry.trace import SpanKind, Status, StatusCode

    clean = {k: v for k, v in attributes.items() if v is not None}
    # Exceptions are not recorded as events: their stack and message may quote page text.
    with tracer.start_as_current_span(
        name, kind=SpanKind.CLIENT if kind == "client" else SpanKind.INTERNAL, attributes=clean,
        record_exception=False, set_status_on_exception=False,
    ) as span:
        handle = SpanHandle(span)
        try:
            yield handle
        except BaseException as exc:
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(Status(StatusCode.ERROR, bounded_text(str(exc), variables) if describe_errors else None))
            raise


async def traced_operation(verb: str, operation: Callable[[], Awaitable[T]], *, instruction: str | None, url: str,
                           variables: VariableSet | None) -> T:
    """``stagehand.<verb>``: one public verb (observe, act, extract, evaluate)."""
    with _span(f"stagehand.{verb}", {
        "stagehand.operation": verb,
        "stagehand.instruction": None if instruction is None else bounded_text(instruction, variables),
        "stagehand.page.url": bounded_text(url, variables),
    }, describe_errors=True, variables=variables) as span:
        result = await operation()
        if span.recording:
            _record_result(span, result)
        return result


def _record_result(span: SpanHandle, result: Any) -> None:
    """What a verb returned, as counts and flags (never values)."""
    if isinstance(result, list):
        span.set("stagehand.actions.count", len(result))
    success = getattr(result, "success", None)
    if isinstance(success, bool):
        span.set("stagehand.act.success", success)
        actions = getattr(result, "actions", None) or []
        if actions:
            span.set("stagehand.action.method", str(getattr(actions[0], "method", "")))
        for flag in ("healed", "cache_hit"):
            value = getattr(result, flag, None)
            if isinstance(value, bool):
                span.set(f"stagehand.act.{flag}", value)


def traced_model_request(call: Callable[[], Awaitable[T]], *, model: str, request: Any) -> Callable[[], Awaitable[T]]:
    """``call`` as a coroutine function that runs it in a :func:`traced_model_call` span (for the
    retry loop, which wants a coroutine function to call once per attempt)."""

    async def traced() -> T:
        return await traced_model_call(call, model=model, request=request)

    return traced


async def traced_model_call(call: Callable[[], Awaitable[T]], *, model: str, request: Any) -> T:
    """``chat <model>``: one request to a model (each transport attempt is its own span), with
    the GenAI semantic conventions: operation, provider, model, token usage, cost when known."""
    provider, _, name = model.partition("/")
    request_model = name or model
    with _span(f"chat {request_model}", {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider if name else None,
        "gen_ai.request.model": request_model,
        "gen_ai.request.max_tokens": getattr(request, "max_output_tokens", None),
        "gen_ai.request.temperature": getattr(request, "temperature", None),
        "stagehand.llm.purpose": getattr(request, "purpose", None),
        "stagehand.llm.attempt": getattr(request, "attempt", None),
    }, kind="client") as span:
        response = await call()
        if span.recording:
            _record_usage(span, getattr(response, "usage", None))
            span.set("gen_ai.response.model", getattr(response, "model", None) or None)
            finish = getattr(response, "finish_reason", None)
            if isinstance(finish, str) and finish:
                span.set("gen_ai.response.finish_reasons", (finish,))
        return response


def _record_usage(span: SpanHandle, usage: Any) -> None:
    if usage is None:
        return
    span.set("gen_ai.usage.input_tokens", int(getattr(usage, "input_tokens", 0)))
    span.set("gen_ai.usage.output_tokens", int(getattr(usage, "output_tokens", 0)))
    cost = getattr(usage, "cost_usd", None)  # read with getattr: present once usage carries dollars
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        span.set("stagehand.usage.cost_usd", float(cost))


async def traced_action(method: str, selector: str, run: Callable[[], Awaitable[T]], *,
                        element_id: str | None = None) -> T:
    """``stagehand.action <method>``: one browser action; its arguments are never recorded."""
    with _span(f"stagehand.action {method}", {
        "stagehand.action.method": method,
        "stagehand.action.element_id": element_id,
        "stagehand.action.selector": selector if len(selector) <= 4 * MAX_TEXT_CHARS and _POSITIONAL_XPATH.match(selector) else None,
    }):
        return await run()


async def traced_agent_run(run: Callable[[], Awaitable[T]], *, instruction: str, mode: str, model: str,
                           max_steps: int, variables: VariableSet | None) -> T:
    """``invoke_agent stagehand``: one agent task; its steps are children."""
    with _span("invoke_agent stagehand", {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "stagehand",
        "gen_ai.request.model": model,
        "stagehand.instruction": bounded_text(instruction, variables),
        "stagehand.agent.mode": mode,
        "stagehand.agent.max_steps": max_steps,
    }, describe_errors=True, variables=variables) as span:
        result = await run()
        if span.recording:
            span.set("stagehand.agent.status", str(getattr(result, "status", "")) or None)
            steps = getattr(result, "steps", None)
            if isinstance(steps, list):
                span.set("stagehand.agent.steps", len(steps))
            _record_usage(span, getattr(result, "usage", None))
        return result


async def traced_agent_step(step: int, run: Callable[[], Awaitable[T]]) -> T:
    """``stagehand.agent.step``: one step of an agent run (its model call and tools are children)."""
    with _span("stagehand.agent.step", {"stagehand.agent.step": step}):
        return await run()
