"""The examples run: in process with a scripted model (or none), and the quickstart as the
subprocess a new user starts, with no model configured."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))  # the examples import their helpers as siblings

import _model_config
import extract_links
import quickstart
import sync_quickstart
import validate_then_act_login
from _local_site import serve_site
from operations._ops import element, find_id, prompt_text

from stagehand_py import Action
from stagehand_py.testing import FunctionLLM

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
            ("anthropic/claude-x", None, "STAGEHAND_MODEL"),
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
        check=False,  # the return code is asserted, with stderr
    )
    assert done.returncode == 0, done.stderr
    _check_no_model_output(done.stdout)
    assert "Traceback" not in done.stderr


# --- the model-driven parts, with a scripted model -------------------------------------------


def _answer(request: Any) -> dict[str, Any]:
    """Answers like a model would, reading the ids off the outline it was shown."""
    if request.purpose == "observe":
        text = prompt_text(request)
        if "sign-in form" in text:
            return {"elements": [
                element(find_id(request, "textbox: Username"), "fill", ["%username%"], "Username field"),
                element(find_id(request, "textbox: Password"), "fill", ["%password%"], "Password field"),
                element(find_id(request, "button: Sign in"), "click", [], "Sign in button"),
            ]}
        if "the Remember me checkbox" in text:  # the examples' instructions, verbatim
            return {"elements": [element(find_id(request, "checkbox: Remember me"), "check", [], "Remember me checkbox")]}
        return {"elements": [element(find_id(request, "link: Products"), "click", [], "Products link")]}
    if request.purpose == "act":
        text = prompt_text(request)
        target = "checkbox: Remember me" if "tick the Remember me checkbox" in text else "link: Products"
        return {"elements": [element(find_id(request, target), "check" if "checkbox" in target else "click")], "opens_options": False}
    assert request.purpose == "extract", request.purpose
    schema = json.dumps(request.output_schema)
    if "url" in schema:  # extract_links: URL fields are answered with link ids
        names = ("Trail Runner Shoes", "Canvas Backpack")
        products = [{"name": n, "price": "$0", "url": find_id(request, f"link: {n}")} for n in names]
        return {"data": {"products": products}, "instruction_satisfied": True}
    if "products" in schema:
        return {"data": {"products": [{"name": "Trail Runner Shoes", "price": "$89.00"}]}, "instruction_satisfied": True}
    return {"data": {"extraction": "Products"}, "instruction_satisfied": True}


@pytest.mark.parametrize("kind", ["launched", "wrapped"])
async def test_quickstart_with_a_model(capsys: pytest.CaptureFixture[str], kind: str) -> None:
    assert await quickstart.main(model=FunctionLLM(_answer), kind=kind) == 0
    out = capsys.readouterr().out
    assert f"model: function; page: {kind}" in out
    assert "observe -> fill ['%username%'] on Username field" in out
    assert "observe -> fill ['%password%'] on Password field" in out
    assert "acted on 3 action(s); username field now holds 'ada'" in out
    assert "correct horse" not in out  # the password's value is never printed
    assert "act -> success=True" in out and "checkbox now checked: True" in out
    assert "extract -> Trail Runner Shoes: $89.00" in out
    assert "model calls: 3" in out
    assert re.search(r"\[observe: [\d.]+ s, 1 model call\(s\), \d+ tokens in \(\d+ from the prompt cache\), \d+ out\]",
                     out), out
    assert "[model: ready at once]" in out and re.search(r"act/observe: \d\.\d\d", out), out
    assert _model_config.HOW_TO_CONFIGURE not in out


def test_the_quickstart_refuses_a_plan_that_types_a_literal_value() -> None:
    form = "xpath=/html[1]/body[1]/main[1]/form[1]/"
    good = [Action(selector=form + "input[1]", method="fill", arguments=["%username%"], description="user"),
            Action(selector=form + "input[2]", method="fill", arguments=["%password%"], description="pw")]
    assert quickstart.check_plan(good) == []
    literal = [good[0], good[1].model_copy(update={"arguments": ["hunter2"]})]
    assert any("literal text" in p for p in quickstart.check_plan(literal))
    assert quickstart.check_plan([]) == ["the model proposed no action"]


async def test_validate_then_act_login_never_shows_the_password(capsys: pytest.CaptureFixture[str]) -> None:
    prompts: list[str] = []

    def model(request: Any) -> dict[str, Any]:
        prompts.append(prompt_text(request))
        return _answer(request)

    secret = "pw-canary-7f3a"
    assert await validate_then_act_login.main(model=FunctionLLM(model), password=secret) == 0
    out = capsys.readouterr().out
    assert "fill   ['%password%']" in out and "page says: Signed in as ada." in out
    assert prompts and "%password%" in prompts[0]
    assert secret not in out and not any(secret in p for p in prompts)


def test_validate_then_act_login_refuses_a_bad_plan() -> None:
    form = validate_then_act_login.FORM_XPATH
    good = [
        Action(selector=form + "input[1]", method="fill", arguments=["%username%"], description="user"),
        Action(selector=form + "input[2]", method="fill", arguments=["%password%"], description="pw"),
        Action(selector=form + "button[1]", method="click", description="submit"),
    ]
    assert validate_then_act_login.check_plan(good) == []
    literal = [good[0], good[1].model_copy(update={"arguments": ["hunter2"]}), good[2]]
    assert any("literal text" in p for p in validate_then_act_login.check_plan(literal))
    elsewhere = [good[0], good[1], Action(selector="xpath=/html[1]/body[1]/nav[1]/a[1]", method="click", description="home")]
    assert any("outside the sign-in form" in p for p in validate_then_act_login.check_plan(elsewhere))
    assert "nothing submits the form" in validate_then_act_login.check_plan(good[:2])


async def test_extract_links_returns_real_absolute_urls(capsys: pytest.CaptureFixture[str]) -> None:
    assert await extract_links.main(model=FunctionLLM(_answer)) == 0
    out = capsys.readouterr().out
    assert re.search(r"Trail Runner Shoes .* http://127\.0\.0\.1:\d+/products/1\.html", out), out
    assert re.search(r"Canvas Backpack .* http://127\.0\.0\.1:\d+/products/2\.html", out), out
    assert "first product page: Trail Runner Shoes - Acme Outfitters" in out


def test_sync_quickstart_without_and_with_a_model(no_model_env: None, capsys: pytest.CaptureFixture[str]) -> None:
    # A plain def test: no asyncio loop runs here, so sync Playwright may start (see test_sync_api.py).
    assert sync_quickstart.main() == 0
    out = capsys.readouterr().out
    assert "textbox: Username" in out and "page says: Welcome, ada!" in out and _model_config.HOW_TO_CONFIGURE in out
    assert sync_quickstart.main(model=FunctionLLM(_answer)) == 0
    out = capsys.readouterr().out
    assert "observe -> click Products link" in out
    assert re.search(r"act -> success=True; now at http://127\.0\.0\.1:\d+/products\.html", out), out
    assert "extract -> {'extraction': 'Products'}" in out
