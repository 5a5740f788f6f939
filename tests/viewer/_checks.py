"""What every kind of ``run.html`` is checked for, in a real browser that opens it from disk.

- the number of steps is the run's;
- every image loads;
- each box drawn for a step is the on-page rectangle of the element that step acted on (within
  :data:`TOLERANCE` CSS pixels, the picture scaled back to the viewport it was taken in);
- the page makes no request but for itself;
- no form of the canary (``_canary.ENCODINGS``) is in the page or any file beside it.

The sign-in page lays its fields out at fixed places, so the rectangle of each element is known
from the live page (or, for a run in another process, from the same page opened here).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from _canary import CANARY, ENCODINGS, found_in

#: Fields at fixed places; the button writes back what was typed (upper-cased, URL-encoded, base64)
#: into the page, so an outline that was not redacted would show the secret.
SIGN_IN = """<!doctype html><title>Sign in</title><style>body{margin:0;font:16px sans-serif}
input,button{position:absolute;left:100px;width:300px;height:36px}#u{top:120px}#p{top:200px}#go{top:280px;width:140px}
.l{position:absolute;left:100px}#msg{position:absolute;left:100px;top:360px}</style>
<span class=l style="top:98px">Username</span><input id=u aria-label=Username>
<span class=l style="top:178px">Password</span><input id=p aria-label=Password>
<button id=go onclick="const v = document.getElementById('p').value; document.getElementById('msg').textContent =
 'Welcome ' + document.getElementById('u').value + ' ' + v.toUpperCase() + ' ' + encodeURIComponent(v) + ' ' +
 btoa(unescape(encodeURIComponent(v)))">Sign in</button><p id=msg></p>"""

#: The element each step acts on, by a word of its title.
ELEMENTS = {"Username": "#u", "Password": "#p", "Sign in": "#go"}
TOLERANCE = 4.0

_READ = """() => {
  const steps = [...document.querySelectorAll('section.step')].map((section) => {
    const figure = section.querySelector('figure.shot');
    const img = figure && figure.querySelector('img');
    const boxes = [];
    if (img) {
      const r = img.getBoundingClientRect();
      const [vw, vh] = figure.dataset.viewport.split('x').map(Number);
      for (const box of figure.querySelectorAll('.box')) {
        const q = box.getBoundingClientRect();
        boxes.push([(q.left - r.left) * vw / r.width, (q.top - r.top) * vh / r.height, q.width * vw / r.width,
                    q.height * vh / r.height]);
      }
    }
    return {title: section.querySelector('h2').textContent, boxes};
  });
  return {steps, images: [...document.images].map((i) => i.complete && i.naturalWidth > 0),
          bar: document.querySelectorAll('nav.bar a').length};
}"""


async def rects_of(page: Any) -> dict[str, tuple[float, float, float, float]]:
    """The on-page rectangle (CSS pixels of the viewport) of each element of :data:`ELEMENTS`."""
    rects = {}
    for word, selector in ELEMENTS.items():
        box = await page.locator(selector).bounding_box()
        rects[word] = (box["x"], box["y"], box["width"], box["height"])
    return rects


async def check_run_html(browser: Any, path: Path, *, steps: int,
                         rects: dict[str, tuple[float, float, float, float]]) -> list[str]:
    """Open ``path`` from disk and check it (see the module's docstring); returns the step titles."""
    context = await browser.new_context(viewport={"width": 1300, "height": 900})
    try:
        page = await context.new_page()
        requests: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        await page.goto(path.resolve().as_uri())
        seen = await page.evaluate(_READ)
    finally:
        await context.close()
    assert requests == [path.resolve().as_uri()], f"run.html made requests: {requests}"
    assert len(seen["steps"]) == steps and seen["bar"] == steps
    assert seen["images"] and all(seen["images"]), f"images that did not load: {seen['images']}"
    boxed = 0
    for step in seen["steps"]:
        word = next((w for w in ELEMENTS if w in step["title"]), None)
        if word is None or not step["boxes"]:
            continue
        boxed += 1
        got, want = step["boxes"][0], rects[word]
        assert all(abs(a - b) <= TOLERANCE for a, b in zip(got, want, strict=True)), (step["title"], got, want)
    assert boxed >= len(ELEMENTS), f"too few boxed steps: {seen['steps']}"
    counts = found_in(path.parent)
    assert counts == dict.fromkeys(ENCODINGS, 0), f"the canary beside {path}: {counts}"
    return [step["title"] for step in seen["steps"]]


#: A scratch project's tests for the pytest plugin: both sign in with three acts (given Actions: no
#: model reads the page), one then fails its assertion.
PLUGIN_TESTS = f'''
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


async def check_failed_test_folder(browser: Any, artifacts: Path, output: str) -> None:
    """What :data:`PLUGIN_TESTS` (saved as ``test_flow.py``, run with ``--stagehand-tracing
    retain-on-failure``) left in ``artifacts``: the failed test's ``run.html`` (checked as
    :func:`check_run_html` does, four steps: three acts and the failure) and its scrubbed trace
    with our verbs as groups; nothing for the passing test; the report's commands to open both."""
    folder = artifacts / "test_flow.py__test_signs_in_then_fails"
    assert sorted(p.name for p in folder.iterdir()) == ["model_calls.json", "outline.txt", "run.html", "screenshot.png",
                                                         "trace.zip"]
    assert not (artifacts / "test_flow.py__test_signs_in").exists()  # a passing test keeps nothing
    assert f"stagehand-py show {folder}" in output and f"playwright show-trace {folder / 'trace.zip'}" in output
    context = await browser.new_context(viewport={"width": 1280, "height": 800})  # the plugin's own viewport
    page = await context.new_page()
    await page.set_content(SIGN_IN)
    rects = await rects_of(page)
    await context.close()
    titles = await check_run_html(browser, folder / "run.html", steps=4, rects=rects)
    assert titles[1].startswith('#2 act: fill "%pw%" "textbox: Password"')
    assert titles[3].startswith("#4 test failed: AssertionError: the page did not welcome us back")
    with zipfile.ZipFile(folder / "trace.zip") as archive:
        events = [json.loads(line) for line in archive.read("trace.trace").decode().splitlines() if line.strip()]
    assert 'act: fill "%pw%" "textbox: Password"' in [e.get("title") for e in events]
