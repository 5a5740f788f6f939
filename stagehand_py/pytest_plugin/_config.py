"""What the plugin's fixtures are configured with for one test, and which models are test doubles."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ARTIFACTS_DEFAULT", "StagehandTestConfig", "is_test_double"]

ARTIFACTS_DEFAULT = "stagehand-artifacts"


@dataclass(frozen=True)
class StagehandTestConfig:
    """What the ``stagehand`` fixtures were configured with for one test."""

    model: Any
    variables: dict[str, Any] = field(default_factory=dict)
    base_url: str | None = None
    choice_mode: bool | None = None
    record: str = "none"
    cache_dir: Path | None = None
    cassette_path: Path | None = None
    #: The hosts the test's browser context is held to (``@pytest.mark.stagehand(allowed_domains=...)``).
    allowed_domains: tuple[str, ...] | None = None
    artifacts_dir: Path = Path(ARTIFACTS_DEFAULT)
    #: ``--stagehand-tracing``: a Playwright trace of the test's context kept as ``trace.zip`` in
    #: ``artifacts_dir`` (``on``), for a failed test only (``retain-on-failure``), or none (``off``).
    tracing: str = "off"

    @property
    def uses_real_model(self) -> bool:
        """Anything but a test double: it can run live, record a cassette or replay one."""
        return not is_test_double(self.model)

    @property
    def model_kind(self) -> str:
        """``test double``, ``embedded``, ``hosted`` or ``model object``: what recording means for it."""
        from ..llm import LLMClient

        if is_test_double(self.model):
            return "test double"
        name = self.model if isinstance(self.model, str) else None
        if isinstance(self.model, LLMClient):
            inner = self.model._model
            return "embedded" if getattr(inner, "provider", "") == "local" else (
                "hosted" if getattr(inner, "records_over_http", False) else "model object")
        if name is not None:
            return "embedded" if name.startswith("local/") else "hosted"
        return "embedded" if getattr(self.model, "provider", "") == "local" else "model object"

    @property
    def secrets(self) -> list[str]:
        """Every variable's value (a TOTP seed and its codes too): never written down."""
        from .._secrets import VariableSet  # imported late: the plugin loads with every pytest run

        return VariableSet.of(self.variables).secret_values()


def is_test_double(model: Any) -> bool:
    """True for ``FunctionLLM``/``ScriptedLLM``, users' doubles (``is_test_double = True``) and an
    ``LLMClient`` around one; every other model is real."""
    from ..llm import LLMClient

    inner = model._model if isinstance(model, LLMClient) else model
    return bool(getattr(inner, "is_test_double", False))
