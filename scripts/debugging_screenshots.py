"""The pictures of docs/guides/debugging.md, and the canary counts of a trace with and without the defence.

    .venv/bin/python scripts/debugging_screenshots.py           # writes docs/images/viewer-*.png, trace-viewer.png
    .venv/bin/python scripts/debugging_screenshots.py --out /tmp/shots --keep /tmp/runs

No model and no key: a scripted model (tests/agent/_script.py) signs in on the example site
(examples/site/login.html) and makes the same mistake every time: at step 3 it ticks "Remember me"
instead of pressing "Sign in", then claims the page says it is signed in (the claim's check fails:
the run ends ``unverified``). The run's three viewer kinds are made
from that one mistake: the agent run's ``run.html`` (``evidence_dir``), a batch row's (a one-row
``run_batch``), and a failed pytest test's (a pytest subprocess with the plugin, whose test makes the
same three acts and asserts it is signed in). Each page is opened from disk in Chromium and
photographed; the agent run's trace is opened in Playwright's own trace viewer (``playwright
show-trace``, served on loopback) and photographed too.

Then the grep: a hostile page (tests/_canary.py) echoes a typed canary in ten encodings; a trace of
it is recorded three ways and every encoding counted across the unzipped trace: a plain Playwright
``fill`` in a trace the user started (no defence), ``Stagehand(trace="on")`` typing it from
``variables=`` (scrubbed), and a Stagehand typing it while the user's own trace records (refused).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from _browser import CHROMIUM_EXECUTABLE, launch_chromium  # noqa: E402
from _canary import CANARY, ENCODINGS, echo_site, found_in, plain_fill_trace  # noqa: E402
from _server import StaticServer, start_pair  # noqa: E402
from agent._script import AgentScript, call  # noqa: E402
from playwright._impl._driver import compute_driver_executable, get_driver_env  # noqa: E402
from playwright.async_api import async_playwright  # noqa: E402

from stagehand_py import Action, SecretInTraceError, Stagehand  # noqa: E402
from stagehand_py.batch import SampleContext, SampleOutcome, run_batch  # noqa: E402
from stagehand_py.batch._report import write_report_html  # noqa: E402
from stagehand_py.batch._spec import Sample, TaskSpec  # noqa: E402

SITE = ROOT / "examples" / "site"
VARIABLES = {"user": "ada", "password": "correct horse battery"}
TASK = "Sign in as ada"


def mistaken_sign_in() -> AgentScript:
    """Fill both fields, tick "Remember me" (the mistake: it should press "Sign in"), claim success."""
    return AgentScript([
        lambda s: call("act", element_id=s.id("textbox", "Username"), method="fill", arguments=["%user%"]),
        lambda s: call("act", element_id=s.id("textbox", "Password"), method="fill", arguments=["%password%"]),
        lambda s: call("act", element_id=s.id("checkbox", "Remember me"), method="check"),
        lambda s: call("done", message='Done: the page says "Signed in as ada."', output=None),
        lambda s: call("done", message='Done: the page says "Signed in as ada."', output=None),
    ])


PLUGIN_TEST = f'''
import pytest
from stagehand_py import Action
from stagehand_py.testing import ScriptedLLM

VARIABLES = {VARIABLES!r}

@pytest.mark.stagehand(model=ScriptedLLM([]), variables=VARIABLES)
async def test_sign_in(stagehand):
    await stagehand.page.goto(__import__("os").environ["SITE_URL"] + "/login.html")
    await stagehand.act(Action(selector="#username", method="fill", arguments=["%user%"], description="textbox: Username"),
                        variables=VARIABLES)
    await stagehand.act(Action(selector="#password", method="fill", arguments=["%password%"],
                               description="textbox: Password"), variables=VARIABLES)
    await stagehand.act(Action(selector="#remember", method="check", description="checkbox: Remember me"))
    assert "Signed in as ada" in await stagehand.page.inner_text("#status"), "not signed in"
'''

INI = "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = session\nasyncio_default_test_loop_scope = session\n"


async def agent_run(site: StaticServer, work: Path) -> Path:
    """The scripted agent run on a launched browser, with its trace: returns its evidence folder."""
    async with await Stagehand.launch(executable_path=CHROMIUM_EXECUTABLE, model=mistaken_sign_in(), trace="on",
                                      trace_path=work / "agent" / "trace.zip") as sh:
        await sh.page.goto(site.url("login.html"))
        result = await sh.agent(evidence_dir=work / "agent").execute(TASK, variables=VARIABLES, max_steps=6)
    print(f"agent run: {result.status}, {len(result.steps)} steps: {result.message}")
    return work / "agent"


async def batch_row(site: StaticServer, browser: Any, work: Path) -> Path:
    async def runner(ctx: SampleContext) -> SampleOutcome:
        await ctx.page.goto(ctx.sample.url)
        result = await Stagehand(ctx.page, model=mistaken_sign_in()).agent().execute(TASK, variables=VARIABLES,
                                                                                        max_steps=6)
        return SampleOutcome(status=result.status, error=None if result.status == "done" else result.message)

    batch = await run_batch([Sample(id="signin-1", url=site.url("login.html"))], spec=TaskSpec(goal=TASK, trace="on"),
                            runner=runner, browser=browser, run_dir=work / "batch")
    write_report_html(work / "batch", batch.results, title=TASK)
    return work / "batch" / "signin-1"


def plugin_test(site: StaticServer, work: Path) -> Path:
    project = work / "plugin"
    project.mkdir(parents=True)
    (project / "pytest.ini").write_text(INI)
    (project / "test_login.py").write_text(PLUGIN_TEST)
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:playwright", "-p", "no:cacheprovider",
                    "--stagehand-tracing", "retain-on-failure"], cwd=project, env={**os.environ, "SITE_URL": site.origin},
                   check=False, capture_output=True, timeout=600)
    return project / "stagehand-artifacts" / "test_login.py__test_sign_in"


async def photograph(browser: Any, page_path: Path, out: Path, *, step: int | None = None) -> None:
    """``page_path`` opened from disk: its top (header, bar, first step), or one step."""
    context = await browser.new_context(viewport={"width": 1280, "height": 860}, device_scale_factor=1)
    page = await context.new_page()
    await page.goto(page_path.resolve().as_uri())
    if step is None:
        await page.screenshot(path=str(out))
    else:
        await page.locator(f"#step-{step}").screenshot(path=str(out))
    await context.close()
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")


async def photograph_trace(browser: Any, trace: Path, out: Path) -> None:
    node, cli = compute_driver_executable()
    server = await asyncio.create_subprocess_exec(node, cli, "show-trace", "-h", "127.0.0.1", "-p", "0", str(trace),
                                                  stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                                                  env={**get_driver_env(), "BROWSER": "true"})
    try:
        assert server.stdout is not None
        address = ""
        while "http://" not in address:
            address = (await asyncio.wait_for(server.stdout.readline(), 60)).decode()
        page = await browser.new_page(viewport={"width": 1280, "height": 720})
        await page.goto(address.split("Listening on ", 1)[-1].strip())
        entry = page.get_by_text("agent step 2: fill Password")
        await entry.wait_for(timeout=60_000)
        await page.locator(".tree-view-entry", has_text="agent step 2").locator(".codicon-chevron-right").click()
        await page.get_by_text('act: fill "%password%"').first.click()
        await page.wait_for_timeout(500)  # the snapshot pane renders
        await page.screenshot(path=str(out))
        await page.close()
        print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    finally:
        server.terminate()
        await server.wait()


async def canary_counts(browser: Any, same: StaticServer, cross: StaticServer, work: Path) -> dict[str, dict[str, int]]:
    """Each encoding's count in the trace of one fill of the canary, three ways (see the module's docstring)."""
    counts: dict[str, dict[str, int]] = {}
    fill = Action(selector="#pw", method="fill", arguments=["%pw%"], description="textbox: Password")
    with echo_site(same, cross) as url:
        context = await browser.new_context()
        counts["plain Playwright fill, user's trace"] = found_in(await plain_fill_trace(context, url, work / "plain.zip"))
        await context.close()

        context = await browser.new_context()
        async with Stagehand(await context.new_page(), trace="on", trace_path=work / "ours.zip") as sh:
            await sh.page.goto(url)
            await sh.act(fill, variables={"pw": CANARY})
            await sh.page.wait_for_function("window.echoed === true")
            await sh.act(Action(selector="#go", method="click"))
            await sh.page.get_by_text("Signed in as").wait_for()
        await context.close()
        counts['Stagehand(trace="on")'] = found_in(work / "ours.zip")

        context = await browser.new_context()
        sh = Stagehand(await context.new_page())
        await sh.page.goto(url)
        await context.tracing.start(screenshots=True, snapshots=True)
        try:
            await sh.act(fill, variables={"pw": CANARY})
        except SecretInTraceError:
            pass  # refused: nothing was typed
        await context.tracing.stop(path=work / "refused.zip")
        await sh.close()
        await context.close()
        counts["Stagehand, user's trace (refused)"] = found_in(work / "refused.zip")
    return counts


def table(counts: dict[str, dict[str, int]]) -> str:
    ways = list(counts)
    lines = ["| encoding | " + " | ".join(ways) + " |", "|---|" + "---:|" * len(ways)]
    lines += [f"| {name} | " + " | ".join(str(counts[w][name]) for w in ways) + " |" for name in ENCODINGS]
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images", help="where the pictures go")
    parser.add_argument("--keep", type=Path, help="keep the runs' files here (default: a temporary folder)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="stagehand-debugging-") as scratch:
        work = args.keep or Path(scratch)
        site = StaticServer(SITE).start()
        same, cross = start_pair()
        try:
            async with async_playwright() as pw:
                browser = await launch_chromium(pw)
                agent = await agent_run(site, work)
                row = await batch_row(site, browser, work)
                failed = await asyncio.to_thread(plugin_test, site, work)
                await photograph(browser, agent / "run.html", args.out / "viewer-agent.png")
                await photograph(browser, agent / "run.html", args.out / "viewer-agent-step.png", step=3)
                await photograph(browser, row / "run.html", args.out / "viewer-batch.png")
                await photograph(browser, failed / "run.html", args.out / "viewer-pytest.png")
                await photograph_trace(browser, agent / "trace.zip", args.out / "trace-viewer.png")
                counts = await canary_counts(browser, same, cross, work)
                await browser.close()
        finally:
            site.stop()
            same.stop()
            cross.stop()
    print(textwrap.dedent(f"""
        Canary "{CANARY}" in the unzipped trace, per encoding
        ({datetime.date.today()}, {platform.node()}, {platform.machine()}, {os.cpu_count()} cores; Chromium at
        {CHROMIUM_EXECUTABLE}):
        """))
    print(table(counts))


if __name__ == "__main__":
    asyncio.run(main())
