"""The pytest plugin, run the way a user runs it: pytest in a subprocess on a scratch project.

Subprocesses (not in-process pytester) because Playwright, pytest-asyncio's loop and the
plugin's session browser must start and end with their own pytest session.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

import pytest
from viewer._checks import PLUGIN_TESTS, check_failed_test_folder

HERE = Path(__file__).resolve().parent
FAKE_PROVIDER = HERE.parent / "llm" / "_fake_provider.py"

INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = session
asyncio_default_test_loop_scope = session
"""


def run(pytester: pytest.Pytester, *args: str, **env: str) -> pytest.RunResult:
    pytester.makeini(INI)
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "STAGEHAND_MODEL", "STAGEHAND_BLOCK_MODEL_REQUESTS"):
        pytester._monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        pytester._monkeypatch.setenv(name, value)
    # pytest-playwright, when installed, is tested on its own below.
    return pytester.runpytest_subprocess("-p", "no:playwright", "-p", "no:cacheprovider", *args, timeout=240)


def masked(png: Path) -> bool:
    """True when the screenshot has the mask's box (MASK_COLOR) over a field."""
    from PIL import Image

    from stagehand_py._vision import MASK_COLOR

    colour = tuple(int(MASK_COLOR[i:i + 2], 16) for i in (1, 3, 5))
    with Image.open(png) as image:
        counts = {c: n for n, c in image.convert("RGB").getcolors(1 << 24) or []}
    return counts.get(colour, 0) > 100


def section(output: str, title: str) -> str:
    """The body of the first report section called ``title`` (pytest prints ``--- title ---``)."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if f" {title} " in line and line.startswith("-"))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith(("---", "===", "___"))), len(lines))
    return "\n".join(lines[start + 1:end])


ASYNC_TESTS = '''
import pytest
from stagehand_py import ModelRequestBlockedError, Stagehand
from stagehand_py.llm import LLMClient, UserMessage, TextPart
from stagehand_py.testing import ScriptedLLM
from stagehand_py.pytest_plugin import StagehandTestConfig

SEEN = []

@pytest.mark.stagehand(model=ScriptedLLM([]), variables={"user": "ada"})
async def test_page_and_marker(stagehand, stagehand_config):
    assert isinstance(stagehand, Stagehand)
    assert isinstance(stagehand_config.model, ScriptedLLM) and stagehand_config.variables == {"user": "ada"}
    await stagehand.page.set_content("<h1>Hello plugin</h1><button>Go</button>")
    snap = await stagehand.snapshot()
    assert "Hello plugin" in snap.tree
    await stagehand.page.context.add_cookies([{"name": "c", "value": "1", "url": "http://127.0.0.1/"}])
    SEEN.append((stagehand.page.context.browser, stagehand.page.context))

async def test_isolated_context_same_browser(stagehand, stagehand_config):
    browser, context = SEEN[0]
    assert stagehand.page.context.browser is browser and stagehand.page.context is not context
    assert await stagehand.page.context.cookies() == []
    assert context.pages == []  # the previous test's context was closed
    assert stagehand_config.model == "openai/from-option"
    assert stagehand_config.cache_dir is not None and stagehand_config.cache_dir.name == "cachedir"
    assert stagehand_config.record == "none"

@pytest.mark.stagehand(model=ScriptedLLM([{"answer": "pw is s3cr3t-PW"}]),
                       variables={"password": {"value": "s3cr3t-PW", "description": "the password"}})
async def test_fails_with_evidence(stagehand):
    await stagehand.page.set_content("<h1>Evidence page</h1><input aria-label='Password' value='s3cr3t-PW'>")
    client = LLMClient(ScriptedLLM([{"answer": "pw is s3cr3t-PW"}]))
    await client.generate([UserMessage([TextPart(text="type s3cr3t-PW please")])], purpose="act",
                          output={"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]})
    assert False, "deliberate failure"

async def test_real_model_without_cassette_is_blocked(stagehand):
    await LLMClient("openai/gpt-4.1-mini", api_key="sk-unused").generate("hello")
'''


async def test_async_fixture_self_launched_options_isolation_evidence_blocking_and_run_viewer(
        pytester: pytest.Pytester, browser) -> None:
    # One pytest run for all (a subprocess costs seconds): the run viewer's tests (PLUGIN_TESTS) ride along.
    pytester.makepyfile(test_flows=ASYNC_TESTS, test_flow=PLUGIN_TESTS)
    result = await asyncio.to_thread(run, pytester, "--stagehand-model", "openai/from-option", "--stagehand-cache-dir",
                                     "cachedir", "--stagehand-tracing", "retain-on-failure", "-rA")
    result.assert_outcomes(passed=3, failed=3)
    # run.html and trace.zip of a failed test, opened in a real browser (tests/viewer/_checks.py)
    await check_failed_test_folder(browser, pytester.path / "stagehand-artifacts", result.stdout.str())

    # failure evidence: files in the artifacts folder and sections in the report, secrets redacted
    folder = pytester.path / "stagehand-artifacts" / "test_flows.py__test_fails_with_evidence"
    assert sorted(p.name for p in folder.iterdir()) == ["model_calls.json", "outline.txt", "run.html", "screenshot.png",
                                                         "trace.zip"]
    assert "Evidence page" in (folder / "outline.txt").read_text()
    assert (folder / "screenshot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert masked(folder / "screenshot.png")  # the field showing the secret, boxed over
    calls_text = (folder / "model_calls.json").read_text()
    calls = json.loads(calls_text)
    assert len(calls) == 1 and calls[0]["request"]["purpose"] == "act"
    assert "s3cr3t-PW" not in calls_text and "%secret%" in calls_text
    result.stdout.fnmatch_lines(["*stagehand artifacts*", "*model calls: 1*", "*stagehand snapshot outline*", "*Evidence page*"])
    last_call = section(result.stdout.str(), "stagehand last model call")
    assert "%secret%" in last_call and "s3cr3t-PW" not in last_call
    # passing tests leave no artifacts
    assert not (pytester.path / "stagehand-artifacts" / "test_flows.py__test_page_and_marker").exists()

    # a real model with no cassette: a blocked request with the recipe to record one
    out = result.stdout.str()
    assert "ModelRequestBlockedError" in out
    assert "cassettes/test_flows/test_real_model_without_cassette_is_blocked.json does not exist" in out
    assert "--stagehand-record once" in out


RECORD_TESTS = '''
import os
from pydantic import BaseModel
from stagehand_py.llm import LLMClient

class Book(BaseModel):
    title: str

async def test_extract(stagehand, stagehand_config):
    client = LLMClient(stagehand_config.model, api_key=os.environ.get("OPENAI_API_KEY", "no-key"),
                       base_url=os.environ["FAKE_URL"] + "/v1", output_mode="json_schema")
    result = await client.generate("Dune", purpose="extract", output=Book)
    assert result.output.title == "Dune"
'''


def test_record_once_then_replay_without_key_then_miss(pytester: pytest.Pytester) -> None:
    sys.path.insert(0, str(FAKE_PROVIDER.parent))
    try:
        from _fake_provider import FakeProvider, chat_completion
    finally:
        sys.path.pop(0)
    pytester.makepyfile(test_rec=RECORD_TESTS)
    cassette = pytester.path / "cassettes" / "test_rec" / "test_extract.json"
    with FakeProvider() as fake:
        fake.reply(chat_completion('{"title": "Dune"}'))
        run(pytester, "--stagehand-record", "once", FAKE_URL=fake.url, OPENAI_API_KEY="sk-live-KEY").assert_outcomes(passed=1)
        assert len(fake.seen) == 1
        assert cassette.exists() and "sk-live-KEY" not in cassette.read_text()
        # replay with no key in the default mode; a second test whose request differs from its
        # cassette misses and is told how to re-record. The server would answer 599 now.
        pytester.makepyfile(test_rec=RECORD_TESTS + RECORD_TESTS.replace("test_extract", "test_changed").replace('"Dune", purpose', '"Dune Messiah", purpose'))
        changed = cassette.with_name("test_changed.json")
        shutil.copy(cassette, changed)
        replay = run(pytester, FAKE_URL=fake.url)
        replay.assert_outcomes(passed=1, failed=1)
        assert len(fake.seen) == 1
        replay.stdout.fnmatch_lines(["*test_changed.json has no matching recording*--stagehand-record is 'none'*"])


def test_plugin_stays_out_of_the_way_of_tests_that_do_not_ask(pytester: pytest.Pytester) -> None:
    # In process: nothing here starts a browser.
    pytester.makeini(INI)
    pytester.makepyfile(test_plain="def test_x():\n    assert 1\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--stagehand-record", "all")
    result.assert_outcomes(passed=1)
    assert not (pytester.path / "stagehand-artifacts").exists() and not (pytester.path / "cassettes").exists()
    help_text = pytester.runpytest("--help").stdout.str()
    for option in ("--stagehand-model", "--stagehand-record", "--stagehand-cache-dir", "--stagehand-artifacts",
                   "--stagehand-base-url", "--stagehand-choice-mode"):
        assert option in help_text
    bad = pytester.runpytest("--stagehand-record", "sometimes")
    assert bad.ret != 0 and "invalid choice" in bad.stderr.str()
    markers = pytester.runpytest("--markers").stdout.str()
    assert "@pytest.mark.stagehand(model=None, variables=None, base_url=None, choice_mode=None, allowed_domains=None)" in markers


SYNC_TESTS = '''
import pytest
from stagehand_py.sync_api import Stagehand
from stagehand_py.testing import ScriptedLLM

SEEN = []

@pytest.mark.stagehand(model=ScriptedLLM([]))
def test_sync_page(stagehand_sync):
    assert isinstance(stagehand_sync, Stagehand)
    stagehand_sync.page.set_content("<h1>Sync hello</h1>")
    assert "Sync hello" in stagehand_sync.snapshot().tree
    SEEN.append(stagehand_sync.page.context)

@pytest.mark.stagehand(variables={"pin": "s3cr3t-PIN"})
def test_sync_fails_with_evidence(stagehand_sync):
    assert stagehand_sync.page.context is not SEEN[0]
    stagehand_sync.page.set_content("<h1>Sync evidence</h1><input aria-label='PIN' value='s3cr3t-PIN'>")
    assert False
'''

PYTEST_PLAYWRIGHT_CONFTEST = '''
import pytest

@pytest.fixture(scope="session")
def browser_type_launch_args():
    # Debian's Chromium (Playwright's own download is not available everywhere)
    return {"executable_path": "/usr/bin/chromium", "args": ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]}
'''


AN_ASYNC_TEST_AFTER = '''
async def test_async_after_sync(stagehand):
    await stagehand.page.set_content("<h1>Async after sync</h1>")
    assert "Async after sync" in (await stagehand.snapshot()).tree
'''


def test_sync_fixture_self_launched(pytester: pytest.Pytester) -> None:
    # An async test after the sync ones, in the same session: sync Playwright's loop must be gone by then (and
    # before the session's async fixtures end), or pytest-asyncio cannot run its own.
    pytester.makepyfile(test_sync=SYNC_TESTS, test_then_async=AN_ASYNC_TEST_AFTER)
    result = run(pytester)
    result.assert_outcomes(passed=2, failed=1)
    folder = pytester.path / "stagehand-artifacts" / "test_sync.py__test_sync_fails_with_evidence"
    assert "Sync evidence" in (folder / "outline.txt").read_text()
    assert (folder / "screenshot.png").read_bytes()[:4] == b"\x89PNG" and masked(folder / "screenshot.png")
    assert '<section class="step failed"' in (folder / "run.html").read_text()  # the sync fixture's run viewer


def test_sync_fixture_on_pytest_playwright_page(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_playwright", reason="pytest-playwright is not installed (it is in the dev extra)")
    pytester.makeconftest(PYTEST_PLAYWRIGHT_CONFTEST)
    pytester.makepyfile(test_pw=SYNC_TESTS.replace(
        "    SEEN.append(stagehand_sync.page.context)",
        "    SEEN.append(stagehand_sync.page.context)\n    assert stagehand_sync.page is page\n",
    ).replace("def test_sync_page(stagehand_sync)", "def test_sync_page(stagehand_sync, page)"))
    pytester.makeini(INI)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "playwright", timeout=240)
    result.assert_outcomes(passed=1, failed=1)
    assert (pytester.path / "stagehand-artifacts" / "test_pw.py__test_sync_fails_with_evidence" / "outline.txt").exists()


def test_every_variable_form_is_kept_out_of_cassettes_and_evidence() -> None:
    """The plugin's redaction comes from the one VariableSet: a plain value, a described one and a
    Secret (TOTP seed and codes included) are all hidden; it once hid only the described form."""
    import pyotp

    from stagehand_py import Secret
    from stagehand_py.pytest_plugin import StagehandTestConfig

    seed = "JBSWY3DPEHPK3PXPJBSWY3DP"
    config = StagehandTestConfig(model=None, variables={
        "user": "ada-plain", "pw": {"value": "described-PW", "description": "the password"},
        "key": Secret("bound-KEY", origins=["http://127.0.0.1"]), "otp": Secret(seed, totp=True)})
    hidden = set(config.secrets)
    assert {"ada-plain", "described-PW", "bound-KEY", seed, pyotp.TOTP(seed).now()} <= hidden
