"""When the engine looks for closed shadow roots over CDP (``DOM.getDocument(pierce=true)``, which
moves the whole DOM and costs several walks on a big page): only where the walker saw a possible
host. Custom elements and standard elements whose rendering does not match their light DOM are
found and their closed roots shown and acted on; a page without any is never scanned."""

from __future__ import annotations

import pytest

from stagehand_py import Action
from stagehand_py.snapshot import _capture

from .conftest import load


@pytest.fixture
def scans(monkeypatch) -> list[int]:
    """Counts the engine's closed-root scans (one per CDP target looked into)."""
    calls: list[int] = []
    real = _capture.full_dom_tree

    async def counting(session, **kwargs):
        calls.append(1)
        return await real(session, **kwargs)

    monkeypatch.setattr(_capture, "full_dom_tree", counting)
    return calls


_STANDARD_HOSTS = """<!doctype html><title>t</title><h1>Standard hosts</h1>
<div id=empty></div>
<section id=full><p>Light text the root does not slot</p></section>
<script>
  const a = document.getElementById('empty').attachShadow({ mode: 'closed' });
  a.innerHTML = '<button>Inside a div</button>';
  a.querySelector('button').onclick = (e) => { e.target.textContent = 'Div pressed'; };
  document.getElementById('full').attachShadow({ mode: 'closed' }).innerHTML = '<button>Inside a section</button>';
</script>"""


async def test_closed_roots_on_standard_elements_are_found_and_reached(sh, page, scans) -> None:
    await page.set_content(_STANDARD_HOSTS)
    snap = await sh.snapshot()
    assert "button: Inside a div" in snap.tree and "button: Inside a section" in snap.tree
    assert "Light text" not in snap.tree  # not slotted: not rendered
    assert scans
    button = next(e for e in snap.elements if e.name == "Inside a div")
    assert (await sh.act(Action(selector=f"xpath={button.xpath}", method="click"))).success
    assert "button: Div pressed" in (await sh.snapshot()).tree


async def test_a_page_without_possible_hosts_is_never_scanned(sh, page, server, scans) -> None:
    for path in ("forms.html", "links.html", "frames/outer.html", "cross_site.html"):
        await load(page, server.url(path))
        await sh.snapshot()
        await sh.snapshot()
    assert scans == []


async def test_control_a_custom_element_is_scanned_once_per_document(sh, page, server, scans) -> None:
    """Control for the test above: the counter does see the scans of a page with a custom element."""
    await load(page, server.url("shadow.html"))
    first = await sh.snapshot()
    assert "button: Closed shadow button" in first.tree
    assert len(scans) == 1
    await sh.snapshot()
    assert len(scans) == 1  # the same document: not looked into again
