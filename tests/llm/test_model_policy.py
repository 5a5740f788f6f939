"""One model policy: ``default_model`` decides, and the library, the plugin, the MCP server, the batch
CLI and the examples all take its answer (none keeps a rule of its own)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

import stagehand_py
from stagehand_py import Stagehand
from stagehand_py.llm import EMBEDDED_MODEL_FILE, LOCAL_TOKEN_BUDGET, ModelChoice, default_model
from stagehand_py.mcp import MCPServerConfig
from stagehand_py.pytest_plugin import _default_model as plugin_default

PACKAGE = Path(stagehand_py.__file__).parent


@pytest.fixture
def engine_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "xllamacpp" else real(name, *a))


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, None),
        ({"STAGEHAND_MODEL": "gpt-4.1"}, None),  # a bare name with nothing to talk to configures nothing
        ({"OPENAI_API_KEY": "k"}, ("openai/gpt-4.1-mini", None, "OPENAI_API_KEY")),
        ({"ANTHROPIC_API_KEY": "k", "STAGEHAND_MODEL": "claude-x"}, ("anthropic/claude-x", None, "ANTHROPIC_API_KEY")),
        ({"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}, ("openai/gpt-4.1-mini", None, "OPENAI_API_KEY")),
        ({"GEMINI_API_KEY": "k"}, ("google/gemini-2.5-flash", None, "GEMINI_API_KEY")),
        # A provider named explicitly wins over the keys (its client says what is missing).
        ({"OPENAI_API_KEY": "k", "STAGEHAND_MODEL": "anthropic/claude-x"}, ("anthropic/claude-x", None, "STAGEHAND_MODEL")),
        ({"STAGEHAND_BASE_URL": "http://127.0.0.1:8080/v1", "OPENAI_API_KEY": "k"},
         ("openai/llama3.2", "http://127.0.0.1:8080/v1", "STAGEHAND_BASE_URL")),
    ],
)
def test_the_rule(env: dict[str, str], expected: tuple[str, str | None, str] | None, tmp_path: Path) -> None:
    env = {"STAGEHAND_MODELS_DIR": str(tmp_path), **env}  # no model file here
    choice = default_model(env)
    assert (None if choice is None else (choice.model, choice.base_url, choice.source)) == expected


def test_no_key_picks_the_embedded_model_with_a_small_budget(tmp_path: Path, engine_installed: None) -> None:
    (tmp_path / EMBEDDED_MODEL_FILE).write_bytes(b"GGUF")
    env = {"STAGEHAND_MODELS_DIR": str(tmp_path)}
    choice = default_model(env)
    assert choice == ModelChoice(f"local/{tmp_path / EMBEDDED_MODEL_FILE}", None, "local model file")
    assert choice.token_budget == LOCAL_TOKEN_BUDGET
    assert default_model({**env, "OPENAI_API_KEY": "k"}) == ModelChoice("openai/gpt-4.1-mini", None, "OPENAI_API_KEY")


@pytest.mark.parametrize(
    "env",
    [{}, {"OPENAI_API_KEY": "k"}, {"ANTHROPIC_API_KEY": "k", "STAGEHAND_MODEL": "claude-x"},
     {"STAGEHAND_BASE_URL": "http://127.0.0.1:9/v1", "STAGEHAND_MODEL": "qwen"}, "embedded"],
)
def test_every_entry_point_takes_the_same_answer(env: dict[str, str] | str, tmp_path: Path, engine_installed: None,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    environ = {"STAGEHAND_MODELS_DIR": str(tmp_path)}
    if env == "embedded":
        (tmp_path / EMBEDDED_MODEL_FILE).write_bytes(b"GGUF")
    else:
        assert isinstance(env, dict)
        environ.update(env)
    expected = default_model(environ)
    assert MCPServerConfig().resolved_model(environ) == expected
    plugin_model, plugin_base_url = plugin_default(environ)
    assert (plugin_model, plugin_base_url) == ((expected.model, expected.base_url) if expected else ("openai/gpt-4.1-mini", None))
    examples = Path(__file__).resolve().parents[2] / "examples"
    monkeypatch.syspath_prepend(str(examples))
    import _model_config

    assert _model_config.model_from_env(environ) == expected


def test_no_module_keeps_a_rule_of_its_own() -> None:
    """The provider-key defaults and the embedded model's file name are written once, in the policy."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "_policy.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                node.value in ("openai/gpt-4.1-mini", "anthropic/claude-sonnet-4-5") or node.value == EMBEDDED_MODEL_FILE
            ):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.value!r}")
    # The plugin names gpt-4.1-mini as what a cassette says when the environment configures nothing.
    assert [o for o in offenders if not o.startswith("pytest_plugin/__init__.py")] == []


async def test_the_library_uses_the_embedded_model_when_no_key_is_set(page, tmp_path: Path, engine_installed: None,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "STAGEHAND_MODEL", "STAGEHAND_BASE_URL", "STAGEHAND_LOCAL_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("STAGEHAND_MODELS_DIR", str(tmp_path))
    sh = Stagehand(page)
    assert not sh._has_model()  # control: nothing installed
    (tmp_path / EMBEDDED_MODEL_FILE).write_bytes(b"GGUF")
    sh = Stagehand(page)
    assert sh._has_model()
    assert sh._token_budget == LOCAL_TOKEN_BUDGET
    assert Stagehand(page, token_budget=9000)._token_budget == 9000  # the caller's budget wins
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    assert Stagehand(page)._token_budget == 16_000
