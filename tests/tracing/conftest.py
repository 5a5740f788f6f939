"""One in-memory OpenTelemetry exporter for the tracing tests.

OpenTelemetry's global tracer provider can be set once per process: the exporter is added to the
SDK provider already set (by another test of the same run) or to a new one set on first use, and
each test empties it. The library finds the provider the way a user's set-up gives it one:
through the global API.
"""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_EXPORTER = InMemorySpanExporter()
_INSTALLED: list[TracerProvider] = []


def _install() -> None:
    if _INSTALLED:
        return
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    _INSTALLED.append(provider)


@pytest.fixture
def spans() -> InMemorySpanExporter:
    _install()
    _EXPORTER.clear()
    return _EXPORTER
