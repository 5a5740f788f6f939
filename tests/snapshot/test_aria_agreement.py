"""Our ARIA roles and names against Chrome's own computation (computedRole/computedName).

The snapshot computes roles and names itself, the same on every page. Here a browser that
exposes Chrome's computation (a launch flag) snapshots each test page twice: once with our
rules, once with the walker reading Chrome's answers instead; the outlines are compared line by
line and the agreement is printed. Where we differ on purpose (a file chooser's or colour
picker's role, <summary> as a button), both outlines still say what a user can do.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import pytest

from stagehand_py import Stagehand
from stagehand_py.snapshot import _capture
from stagehand_py.snapshot._aria import aria_source

from .conftest import load

PAGES = ["forms.html", "links.html", "hidden.html", "shadow.html", "frames/outer.html", "cross_site.html", "aria.html",
         "index.html", "dynamic.html", "products.html", "vision.html", "injection.html", "scroll.html",
         "vision/toolbar.html", "vision/status.html"]
DOCS = Path("/usr/share/doc/python3-doc/html")
CHROME_RULES = "{ roleOf: (el) => el.computedRole || '', nameOf: (el) => el.computedName || '' }"


def _lines(tree: str) -> list[str]:
    return re.sub(r"\[(\d+)-\d+\]", r"[\1-#]", tree).split("\n")


async def _agreement(stagehand: Stagehand, cdp, monkeypatch, ours_source) -> tuple[int, int, list[str]]:
    monkeypatch.setattr(_capture, "_walker_source", ours_source)
    ours = _lines((await stagehand.snapshot()).tree)
    monkeypatch.setattr(_capture, "_walker_source", lambda: ours_source().replace(aria_source(), CHROME_RULES))
    await cdp.send("Accessibility.getRootAXNode")  # keeps Chrome's computedName fast on big pages
    chrome = _lines((await stagehand.snapshot()).tree)
    monkeypatch.setattr(_capture, "_walker_source", ours_source)
    same = sum(block.size for block in difflib.SequenceMatcher(a=chrome, b=ours, autojunk=False).get_matching_blocks())
    diff = [line for line in difflib.unified_diff(chrome, ours, lineterm="", n=0) if line[:1] in "+-" and line[:3] not in ("---", "+++")]
    return same, max(len(ours), len(chrome)), diff


async def test_roles_and_names_agree_with_chromes_own_computation(pw, server, monkeypatch, capsys) -> None:
    from _browser import CHROMIUM_ARGS, CHROMIUM_EXECUTABLE

    ours_source = _capture._walker_source
    browser = await pw.chromium.launch(executable_path=CHROMIUM_EXECUTABLE,
                                       args=[*CHROMIUM_ARGS, "--enable-blink-features=ComputedAccessibilityInfo"])
    rows = []
    try:
        page = await browser.new_page()
        cdp = await page.context.new_cdp_session(page)
        await cdp.send("Accessibility.enable")
        urls = [server.url(p) for p in PAGES]
        docs = [DOCS / "library/json.html", DOCS / "index.html"]
        urls += [d.as_uri() for d in docs if d.is_file()]
        async with Stagehand(page) as stagehand:
            for url in urls:
                await load(page, url)
                rows.append((url, *await _agreement(stagehand, cdp, monkeypatch, ours_source)))
    finally:
        await browser.close()
    with capsys.disabled():
        print("\nour roles/names vs Chrome's computedRole/computedName, outline lines equal:")
        for url, same, total, diff in rows:
            print(f"  {same:6d}/{total:<6d} {same / total:7.2%}  {url.rsplit('/', 2)[-2] + '/' + url.rsplit('/', 1)[-1]}")
            for line in diff[:6]:
                print("      " + line[:120])
    same = sum(r[1] for r in rows)
    total = sum(r[2] for r in rows)
    print(f"  overall {same}/{total} = {same / total:.2%}")
    assert same / total >= 0.99, rows


def test_the_comparison_can_fail() -> None:
    """Control: a rule set that differs from Chrome's is measured as differing."""
    a, b = _lines("[0-1] button: Go\n[0-2] link: Home"), _lines("[0-1] button: Go\n[0-2] generic")
    assert sum(x.size for x in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_matching_blocks()) == 1


@pytest.mark.parametrize(("html", "role", "name"), [
    ("<label>Email <input id=t></label>", "textbox", "Email"),
    ("<input id=t aria-label='Search the site' placeholder='x'>", "textbox", "Search the site"),
    ("<span id=l>Postcode</span><input id=t aria-labelledby=l>", "textbox", "Postcode"),
    ("<input id=t placeholder='Your city'>", "textbox", "Your city"),
    ("<button id=t><img alt='Close'> </button>", "button", "Close"),
    ("<a id=t href=#>Read <b>more</b></a>", "link", "Read more"),
    ("<a id=t>no href</a>", "generic", ""),
    ("<div id=t role='presentation' tabindex=0>x</div>", "generic", ""),
    ("<input id=t type=submit>", "button", "Submit"),
    ("<select id=t><option>One</option></select>", "combobox", ""),
    ("<h2 id=t>Title <span aria-hidden=true>decor</span></h2>", "heading", "Title"),
    ("<table><tr><th>Name</th></tr><tr><td id=t>Ada</td></tr></table>", "cell", "Ada"),
])
async def test_rules_on_small_cases(page, html: str, role: str, name: str) -> None:
    await page.set_content(html)
    got = await page.evaluate("() => { const A = " + aria_source() + "; const el = document.getElementById('t'); const r = A.roleOf(el); return [r, A.nameOf(el, r)]; }")
    assert got == [role, name]
