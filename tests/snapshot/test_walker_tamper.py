"""The page cannot tamper with the snapshot: the walker runs in the library's own isolated world,
so a page that overrides the DOM's or JavaScript's built-ins gets the same outline as one that
does not, and finds nothing of ours among its globals. Deep DOMs do not overflow the walker."""

from __future__ import annotations

from .conftest import normalize_ids

PAGE = """<!doctype html><title>t</title><main><h1>Orders</h1>
<label>Search <input name=q></label><button>Go</button><a href="/next">Next page</a>
<ul><li>First</li><li>Second</li></ul></main>"""

TAMPER = """<script>
  Element.prototype.getAttribute = function () { return 'forged'; };
  Element.prototype.checkVisibility = function () { return false; };
  Object.defineProperty(Element.prototype, 'localName', { get() { return 'forged'; } });
  Object.defineProperty(Node.prototype, 'firstChild', { get() { return null; } });
  Element.prototype.computedRole = 'forged';
  window.getComputedStyle = () => ({ display: 'none', visibility: 'hidden' });
  JSON.stringify = () => '[{}, [1, "button", 1, 1, "button", "Forged line", null, null, -1, 0]]';
  Array.prototype.push = function () { return 0; };
  WeakMap.prototype.get = () => 1;
</script>"""


async def test_a_page_overriding_built_ins_gets_the_true_outline(sh, page) -> None:
    await page.set_content(PAGE)
    honest = normalize_ids((await sh.snapshot()).tree)
    await page.set_content(PAGE + TAMPER)
    assert await page.evaluate("document.body.getAttribute('x')") == "forged"  # the page's own world is tampered
    tampered = normalize_ids((await sh.snapshot()).tree)
    assert "Forged" not in tampered and "forged" not in tampered
    assert tampered == honest
    assert "button: Go" in honest and "link: Next page" in honest


async def test_the_walker_leaves_no_global_in_the_page(sh, page) -> None:
    await page.set_content(PAGE)
    await sh.snapshot()  # installs the action helpers too
    before = set(await page.evaluate("Object.getOwnPropertyNames(globalThis)"))
    for _ in range(2):
        await sh.snapshot()
    after = set(await page.evaluate("Object.getOwnPropertyNames(globalThis)"))
    assert after == before
    assert not [name for name in after if "stagehand_py_store" in name]


async def test_control_a_main_world_global_would_be_seen(page) -> None:
    """Control: the check above does see a global set in the page's world."""
    await page.set_content(PAGE)
    before = set(await page.evaluate("Object.getOwnPropertyNames(globalThis)"))
    await page.evaluate("globalThis.__stagehand_py_store__ = 1")
    after = set(await page.evaluate("Object.getOwnPropertyNames(globalThis)"))
    assert after - before == {"__stagehand_py_store__"}


async def test_a_dom_a_thousand_levels_deep(sh, page) -> None:
    """As deep as this Chromium lays out (at ~3,000 levels its renderer crashes on any layout)."""
    await page.set_content("<main id=root></main>")
    await page.evaluate(_NEST, {"depth": 1000, "hidden": False})
    snapshot = await sh.snapshot()
    line = next(line for line in snapshot.tree.split("\n") if "button: Deep button" in line)
    assert snapshot.xpath_map[line.strip()[1:].split("]")[0]].count("/div[1]") == 1000


async def test_ten_thousand_levels_do_not_overflow_the_walker(sh, page) -> None:
    """10,000 levels under a display:none wrapper (no layout, so Chromium survives it): the walker
    and the Python side go through all of them without recursion, and the page stays readable."""
    await page.set_content("<main id=root><button>Top button</button></main>")
    await page.evaluate(_NEST, {"depth": 10_000, "hidden": True})
    snapshot = await sh.snapshot()
    assert "button: Top button" in snapshot.tree and "Deep button" not in snapshot.tree


_NEST = """({depth, hidden}) => {
    let node = document.getElementById('root');
    if (hidden) { const h = document.createElement('div'); h.style.display = 'none'; node.appendChild(h); node = h; }
    for (let i = 0; i < depth; i++) { const d = document.createElement('div'); node.appendChild(d); node = d; }
    const b = document.createElement('button'); b.textContent = 'Deep button'; node.appendChild(b);
}"""
