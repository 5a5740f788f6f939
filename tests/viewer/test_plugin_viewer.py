"""A failed pytest test leaves ``run.html`` and, with ``--stagehand-tracing retain-on-failure``, a
scrubbed ``trace.zip`` in its artifacts folder; a passing one leaves neither. The test runs in a
pytest subprocess on a scratch project, as a user runs it; its page is then opened here."""

from __future__ import annotations

import asyncio
import json
import zipfile

import pytest
from _canary import CANARY, ENCODINGS, found_in

from ._checks import SIGN_IN, check_run_html, rects_of

TESTS = f'''
import pytest
from stagehand_py import Action
from stagehand_py.testing import ScriptedLLM

SIGN_IN = {SIGN_IN!r}
VARIABLES = {{"user": "ada", "pw": {CANARY!r}}}

async def sign_in(stagehand):
    await stagehand.page.set_content(SIGN_IN)
    for selector, argument, name in (("#u", "%user%", "textbox: Username"), ("#p", "%pw%", "textbox: Password")):
        await stagehand.act(Action(selector=selector, method="fill", arguments=[argument], description=name),
                            variables=VARIABLES)
    await stagehand.act(Action(selector="#go", method="click", description="button: Sign in"))

@pytest.mark.stagehand(model=ScriptedLLM([]), variables=VARIABLES)
async def test_signs_in_then_fails(stagehand):
    await sign_in(stagehand)
    assert "Welcome back" in await stagehand.page.inner_text("#msg"), "the page did not welcome us back"

@pytest.mark.stagehand(model=ScriptedLLM([]), variables=VARIABLES)
async def test_signs_in(stagehand):
    await sign_in(stagehand)
'''

INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = session
asyncio_default_test_loop_scope = session
"""


async def test_a_failed_test_leaves_run_html_and_its_trace(pytester: pytest.Pytester, browser) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_flow=TESTS)
    result = await asyncio.to_thread(pytester.runpytest_subprocess, "-p", "no:playwright", "-p", "no:cacheprovider",
                                     "--stagehand-tracing", "retain-on-failure", timeout=240)
    result.assert_outcomes(passed=1, failed=1)
    artifacts = pytester.path / "stagehand-artifacts"
    folder = artifacts / "test_flow.py__test_signs_in_then_fails"
    assert sorted(p.name for p in folder.iterdir()) == ["model_calls.json", "outline.txt", "run.html", "screenshot.png",
                                                         "trace.zip"]
    assert not (artifacts / "test_flow.py__test_signs_in").exists()  # a passing test keeps nothing
    result.stdout.fnmatch_lines(["*stagehand run viewer*", f"stagehand-py show {folder}", "playwright show-trace *trace.zip"])

    context = await browser.new_context(viewport={"width": 1280, "height": 800})  # the plugin's own viewport
    page = await context.new_page()
    await page.set_content(SIGN_IN)
    rects = await rects_of(page)
    await context.close()
    titles = await check_run_html(browser, folder / "run.html", steps=4, rects=rects)
    assert titles[1].startswith('#2 act: fill "%pw%" "textbox: Password"')
    assert titles[3].startswith("#4 test failed: AssertionError: the page did not welcome us back")
    assert found_in(folder) == dict.fromkeys(ENCODINGS, 0)
    with zipfile.ZipFile(folder / "trace.zip") as archive:
        events = [json.loads(line) for line in archive.read("trace.trace").decode().splitlines() if line.strip()]
    assert 'act: fill "%pw%" "textbox: Password"' in [e.get("title") for e in events]
