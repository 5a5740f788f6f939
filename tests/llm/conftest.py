from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._fake_provider import FakeProvider


@pytest.fixture(scope="session")
def _fake_server() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


@pytest.fixture
def fake(_fake_server: FakeProvider) -> Iterator[FakeProvider]:
    """The loopback provider, emptied for each test."""
    with _fake_server.emptied() as fake:
        yield fake


@pytest.fixture(autouse=True)
def _no_env_keys_or_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never see the developer's real keys, and start with the kill switch off."""
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
                 "GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "AZURE_OPENAI_API_KEY",
                 "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_AD_TOKEN", "OPENAI_API_VERSION",
                 "STAGEHAND_BLOCK_MODEL_REQUESTS"):
        monkeypatch.delenv(name, raising=False)
