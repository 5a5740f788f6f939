"""The examples run: in process with a scripted model (or none), and the quickstart as the
subprocess a new user starts, with no model configured."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))  # the examples import their helpers as siblings

import _model_config  # noqa: E402
import quickstart  # noqa: E402
from _local_site import serve_site  # noqa: E402

MODEL_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "STAGEHAND_BASE_URL", "STAGEHAND_MODEL")


@pytest.fixture
def no_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in MODEL_VARS:
        monkeypatch.delenv(name, raising=False)


# --- helpers (no browser) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, None),
        ({"STAGEHAND_MODEL": "gpt-4.1"}, None),  # a name alone configures nothing to talk to
        ({"OPENAI_API_KEY": "k"}, ("openai/gpt-4.1-mini", None, "OPENAI_API_KEY")),
        ({"OPENAI_API_KEY": "k", "STAGEHAND_MODEL": "gpt-4.1"}, ("openai/gpt-4.1", None, "OPENAI_API_KEY")),
        ({"ANTHROPIC_API_KEY": "k"}, ("anthropic/claude-sonnet-4-5", None, "ANTHROPIC_API_KEY")),
        (
            {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k", "STAGEHAND_MODEL": "anthropic/claude-x"},
            ("anthropic/claude-x", None, "ANTHROPIC_API_KEY"),
        ),
        (
            {"STAGEHAND_BASE_URL": "http://localhost:11434/v1", "OPENAI_API_KEY": "k"},
            ("openai/llama3.2", "http://localhost:11434/v1", "STAGEHAND_BASE_URL"),
        ),
        (
            {"STAGEHAND_BASE_URL": "http://localhost:8080/v1", "STAGEHAND_MODEL": "qwen2.5"},
            ("openai/qwen2.5", "http://localhost:8080/v1", "STAGEHAND_BASE_URL"),
        ),
    ],
)
def test_model_from_env(env: dict[str, str], expected: tuple[str, str | None, str] | None) -> None:
    choice = _model_config.model_from_env(env)
    assert (None if choice is None else (choice.model, choice.base_url, choice.source)) == expected


def test_local_site_serves_the_example_pages() -> None:
    with serve_site() as site:
        with urllib.request.urlopen(site.url("products.html"), timeout=5) as response:
            body = response.read().decode()
        assert site.origin.startswith("http://127.0.0.1:")
    assert 'href="products/1.html"' in body
    with pytest.raises(OSError):  # stopped with the block
        urllib.request.urlopen(site.url("products.html"), timeout=2)


def test_abridged_outline() -> None:
    assert quickstart.abridged("a\nb\nc", lines=2) == "a\nb\n  ... (1 more lines)"
    assert quickstart.abridged("a\nb", lines=2) == "a\nb"


# --- the quickstart, no model ------------------------------------------------------------


def _check_no_model_output(out: str) -> None:
    assert "Snapshot of http://127.0.0.1:" in out
    assert "textbox: Username" in out  # the outline is printed
    assert "more lines)" in out  # ...abridged
    assert "username: id 0-" in out and "xpath /html[1]/body[1]/main[1]/form[1]/input[1]" in out
    assert "page says: Welcome, ada!" in out  # the hand-built actions ran on the page
    assert _model_config.HOW_TO_CONFIGURE in out
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "STAGEHAND_BASE_URL", "STAGEHAND_MODEL"):
        assert name in out


async def test_quickstart_without_a_model_prints_outline_and_help(no_model_env: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert await quickstart.main() == 0
    _check_no_model_output(capsys.readouterr().out)


def test_quickstart_as_a_subprocess_with_no_keys() -> None:
    env = {k: v for k, v in os.environ.items() if k not in MODEL_VARS}
    # As after `pip install -e .`: the package importable, the examples folder not a package.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "quickstart.py")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    _check_no_model_output(done.stdout)
    assert "Traceback" not in done.stderr
