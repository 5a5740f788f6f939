"""How a batch names its per-sample work so that any process can build it: ``module:factory``
plus keyword options. The local engine builds it once; each Ray worker builds its own (a
runner holds a model client and open connections, which do not travel between processes)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from .._errors import ConfigurationError
from ._runner import SampleRunner

__all__ = ["RunnerFactory", "DEFAULT_RUNNER"]

DEFAULT_RUNNER = "stagehand_py.batch._agent_runner:make_agent_runner"


@dataclass(frozen=True)
class RunnerFactory:
    """``target`` is ``module:factory``; ``factory(model=model, **options)`` returns the runner."""

    target: str = DEFAULT_RUNNER
    model: str | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def build(self) -> SampleRunner:
        module_name, _, attr = self.target.partition(":")
        if not module_name or not attr:
            raise ConfigurationError(f"--runner must look like module:factory, got {self.target!r}")
        try:
            factory = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise ConfigurationError(f"cannot load the runner {self.target!r}: {exc}") from exc
        try:
            runner: SampleRunner = factory(model=self.model, **self.options)
        except TypeError as exc:
            if self.options:
                raise ConfigurationError(f"the runner {self.target!r} does not take {', '.join(sorted(self.options))}: {exc}") from exc
            raise
        return runner
