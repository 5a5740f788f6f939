"""OpenTelemetry spans for what stagehand_py does: observe/act/extract, agent runs and steps,
each model call (GenAI semantic conventions) and each browser action.

Install the ``otel`` extra (``opentelemetry-api``) and configure an OpenTelemetry SDK with the
exporter of your choice (Langfuse, Phoenix, Jaeger, an OTLP collector): spans go to whatever
tracer provider is set globally. Without the extra, or without an SDK, every span is a no-op
and nothing leaves the process. No attribute holds a variable's value, an argument value or
unbounded page text. See docs/guides/tracing.md.
"""

from ._spans import MAX_TEXT_CHARS, TRACER_NAME, tracing_available

__all__ = ["TRACER_NAME", "MAX_TEXT_CHARS", "tracing_available"]
