"""The MCP server's configuration, without a browser: model choice, variables, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from stagehand_py import ConfigurationError
from stagehand_py.mcp import MCPServerConfig, load_config


def test_the_model_comes_from_the_file_then_the_environment(tmp_path: Path) -> None:
    configured = MCPServerConfig(model="openai/gpt-4.1").resolved_model({"ANTHROPIC_API_KEY": "k"})
    assert configured is not None and configured.model == "openai/gpt-4.1"
    from_key = MCPServerConfig().resolved_model({"ANTHROPIC_API_KEY": "k"})
    assert from_key is not None and from_key.model == "anthropic/claude-sonnet-4-5"
    assert MCPServerConfig().resolved_model({"STAGEHAND_MODELS_DIR": str(tmp_path)}) is None  # nothing installed there


def test_the_embedded_model_is_the_default_without_a_key(tmp_path: Path) -> None:
    pytest.importorskip("xllamacpp")
    (tmp_path / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf").write_bytes(b"GGUF")
    choice = MCPServerConfig().resolved_model({"STAGEHAND_MODELS_DIR": str(tmp_path)})
    assert choice is not None and choice.model == f"local/{tmp_path / 'qwen2.5-coder-1.5b-instruct-q4_k_m.gguf'}"


def test_variables_read_the_environment() -> None:
    config = MCPServerConfig.model_validate({"variables": {
        "user": "ada", "password": {"env": "PW", "description": "the password"}, "pin": {"value": "1234"}}})
    assert config.resolved_variables({"PW": "s3cret"}) == {
        "user": {"value": "ada"}, "password": {"value": "s3cret", "description": "the password"}, "pin": {"value": "1234"}}
    with pytest.raises(ConfigurationError, match="'PW', which is not set"):
        config.resolved_variables({})
    with pytest.raises(ConfigurationError, match="exactly one of"):
        MCPServerConfig.model_validate({"variables": {"x": {"value": "a", "env": "B"}}}).resolved_variables({})


def test_bad_files_are_typed_errors(tmp_path: Path) -> None:
    path = tmp_path / "server.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="not valid JSON"):
        load_config(path)
    path.write_text('{"modle": "openai/x"}', encoding="utf-8")
    with pytest.raises(ConfigurationError, match="modle"):
        load_config(path)
    with pytest.raises(ConfigurationError, match="cannot read"):
        load_config(tmp_path / "missing.json")
    path.write_text('{"model": "openai/x", "headless": true}', encoding="utf-8")
    assert load_config(path, model="anthropic/y", headless=None).model == "anthropic/y"
