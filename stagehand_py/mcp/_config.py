"""The MCP server's configuration: which model, which variables, which domains, which browser.

Read from a JSON file (``stagehand-py mcp --config server.json``) and the command line. Variable
values live here, on the server side: an MCP client refers to them as ``%name%`` and never sees
them. A value can be written in the file or, better for secrets, named by an environment
variable (``{"env": "APP_PASSWORD"}``) that the MCP client's launcher sets.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._errors import ConfigurationError
from .._types import Variables, VariableSpec
from ..llm._policy import ModelChoice, default_model

__all__ = ["MCPServerConfig", "VariableSource", "load_config"]


class VariableSource(BaseModel):
    """One variable: its value (``value``, or the environment variable ``env`` that holds it) and
    a description the model may read."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: str | None = None
    env: str | None = None
    description: str = ""


class MCPServerConfig(BaseModel):
    """``stagehand-py mcp`` settings (the JSON file's keys)."""

    model_config = ConfigDict(extra="forbid")

    #: ``"provider/model"`` (``openai/gpt-4.1-mini``, ``local/<file>.gguf``...). Default: from
    #: OPENAI_API_KEY / ANTHROPIC_API_KEY, else the embedded model when installed, else none
    #: (navigate, snapshot, act on an element id, screenshot and tabs still work).
    model: str | None = None
    #: An OpenAI-compatible server (Ollama, llama.cpp, vLLM) for an ``openai/<name>`` model.
    base_url: str | None = None
    #: ``name -> value``, ``name -> {"value": ..., "description": ...}`` or
    #: ``name -> {"env": "ENV_VAR", "description": ...}``.
    variables: dict[str, str | VariableSource] = Field(default_factory=dict)
    #: Glob patterns (``example.com``, ``*.example.com``, ``127.0.0.1:8080``); every other
    #: navigation, request and tab is blocked. None: no restriction.
    allowed_domains: list[str] | None = None
    headless: bool = True
    executable_path: str | None = None
    #: Maximum estimated prompt tokens of a model call (default 16000; 6000 for a local model).
    token_budget: int | None = None
    #: Steps the ``agent`` tool may take at most per task.
    agent_max_steps: int = Field(default=20, ge=1, le=200)

    def resolved_variables(self, environ: Mapping[str, str] | None = None) -> Variables:
        """The variables with their values, read from the environment where the file names one."""
        env = os.environ if environ is None else environ
        resolved: dict[str, VariableSpec] = {}
        for name, source in self.variables.items():
            if isinstance(source, str):
                resolved[name] = {"value": source}
                continue
            if (source.value is None) == (source.env is None):
                raise ConfigurationError(f"variable {name!r}: give exactly one of \"value\" and \"env\".")
            value = source.value if source.value is not None else env.get(source.env or "")
            if value is None:
                raise ConfigurationError(
                    f"variable {name!r} reads the environment variable {source.env!r}, which is not set; set it in "
                    "the environment the MCP client starts the server with (its \"env\" block)."
                )
            spec: VariableSpec = {"value": value}
            if source.description:
                spec["description"] = source.description
            resolved[name] = spec
        return dict(resolved)

    def resolved_model(self, environ: Mapping[str, str] | None = None) -> ModelChoice | None:
        """The model to use: the configured one (with ``base_url``), else the library's default
        (:func:`stagehand_py.llm.default_model`), or None."""
        if self.model:
            return ModelChoice(self.model, self.base_url, "configuration")
        return default_model(environ)


def load_config(path: str | os.PathLike[str] | None, **overrides: Any) -> MCPServerConfig:
    """The configuration in ``path`` (JSON), with the command line's ``overrides`` (None = not given)."""
    data: dict[str, Any] = {}
    if path is not None:
        file = Path(path)
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigurationError(f"cannot read the MCP server configuration {file}: {exc}") from exc
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"{file} is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigurationError(f"{file} must hold a JSON object, not {type(data).__name__}.")
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return MCPServerConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigurationError(f"invalid MCP server configuration: {exc}") from exc
