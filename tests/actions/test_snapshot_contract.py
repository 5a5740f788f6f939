"""The contract between the snapshot and the executor: every xpath the snapshot emits resolves.

Uses the snapshot engine's private capture entry point (there is no public one yet); if that
moves, update the import, not the assertion.
"""

from __future__ import annotations

import pytest

from stagehand_py._actions import install_page_helpers, resolve_element

capture = pytest.importorskip("stagehand_py.snapshot._capture")
cdp = pytest.importorskip("stagehand_py.browser._cdp")


@pytest.mark.parametrize(
    "path",
    ["forms.html", "frames/outer.html", "cross_site.html", "shadow.html", "aria.html", "hidden.html", "links.html"],
)
async def test_every_snapshot_xpath_resolves_to_one_element(page, server, path) -> None:
    await install_page_helpers(page)
    await page.goto(server.url(path))
    for frame in page.frames:
        await frame.wait_for_load_state()
    targets = await cdp.PageTargets.for_page(page)
    snapshot = await capture.capture_snapshot(targets, capture.FrameOrdinals())
    assert snapshot.xpath_map
    failures = []
    for element_id, xpath in snapshot.xpath_map.items():
        try:
            handle = await resolve_element(page, xpath, timeout=0)
        except Exception as exc:  # collect them all: one report says more than the first
            failures.append(f"{element_id} {xpath}: {type(exc).__name__}: {exc}")
        else:
            await handle.dispose()
    assert not failures, "\n".join(failures[:20])
