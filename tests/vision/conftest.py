"""Fixtures for the vision tests: a 127.0.0.1 server over the Python docs (skipped when absent)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _server import StaticServer

DOCS = Path("/usr/share/doc/python3-doc/html")


@pytest.fixture(scope="session")
def docs_server() -> Iterator[StaticServer]:
    if not (DOCS / "library" / "json.html").exists():
        pytest.skip("Python docs missing: apt-get install -y python3-doc")
    server = StaticServer(root=DOCS).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def fake_provider():
    """The LLM layer's loopback OpenAI/Anthropic server (tests/llm/_fake_provider.py), emptied per use."""
    from llm._fake_provider import FakeProvider

    with FakeProvider() as fake:
        yield fake


@pytest.fixture
def fake(fake_provider):
    with fake_provider.emptied() as empty:
        yield empty
