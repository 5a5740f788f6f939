"""The DOM-confidence score on real pages: ordering, breakdown, the snapshot field, the fallback
without Chrome's computed accessibility info."""

from __future__ import annotations

import pytest

from stagehand_py._errors import InvalidArgumentError
from stagehand_py._stagehand import Stagehand
from stagehand_py._vision import LOW_CONFIDENCE, measure_dom_confidence
from stagehand_py.snapshot._confidence import parse_confidence

LOW_PAGES = ["vision/dashboard.html", "vision/toolbar.html", "vision/status.html", "vision.html"]


async def _score(page, url: str, **kwargs) -> float:
    await page.goto(url)
    async with Stagehand(page) as sh:
        snap = await sh.snapshot(confidence=True, **kwargs)
    assert snap.dom_confidence is not None
    return snap.dom_confidence


async def test_ordinary_pages_score_high_and_pixel_pages_low(page, server, docs_server) -> None:
    ordinary = {
        "python docs": await _score(page, docs_server.url("library/json.html")),
        "forms": await _score(page, server.url("forms.html")),
    }
    labelled = await _score(page, server.url("vision/toolbar.html?labelled"))
    low = {path: await _score(page, server.url(path)) for path in LOW_PAGES}
    assert min(ordinary.values()) >= 0.9, ordinary
    # Labels alone lift the same toolbar above the vision threshold; a small page still pays for
    # having little to say.
    assert LOW_CONFIDENCE <= labelled < min(ordinary.values())
    assert max(low.values()) < LOW_CONFIDENCE, low
    assert low["vision/toolbar.html"] < labelled


async def test_breakdown_names_each_penalty(page, server) -> None:
    await page.goto(server.url("vision/toolbar.html"))
    toolbar = await measure_dom_confidence(page)
    assert (toolbar.interactive, toolbar.unnamed, toolbar.graphics, toolbar.canvas_share) == (6, 6, 6, 0.0)
    assert toolbar.low and toolbar.factors["unnamed"] == pytest.approx(0.4)

    await page.goto(server.url("vision/toolbar.html?labelled"))
    labelled = await measure_dom_confidence(page)
    assert (labelled.interactive, labelled.unnamed, labelled.graphics) == (6, 0, 0)  # aria-hidden icons are decoration

    await page.goto(server.url("vision/dashboard.html"))
    dashboard = await measure_dom_confidence(page)
    assert dashboard.canvas_share > 0.5 and dashboard.factors["canvas"] == pytest.approx(0.3)
    assert dashboard.semantic < 5 and dashboard.factors["sparse"] < 0.7

    await page.goto(server.url("vision/status.html"))
    status = await measure_dom_confidence(page)
    assert (status.graphics, status.unnamed) == (4, 0) and status.factors["graphics"] < 1

    await page.goto(server.url("vision.html"))
    mixed = await measure_dom_confidence(page)
    assert (mixed.interactive, mixed.unnamed, mixed.graphics) == (4, 2, 2)  # trash and star
    assert 0 < mixed.canvas_share < 0.1


async def test_snapshot_field_is_opt_in_and_agrees_with_the_breakdown(page, server) -> None:
    await page.goto(server.url("vision/toolbar.html"))
    async with Stagehand(page) as sh:
        plain = await sh.snapshot()
        measured = await sh.snapshot(confidence=True)
        scoped = await sh.snapshot(selector=".bar", confidence=True)
    assert plain.dom_confidence is None
    assert measured.dom_confidence == (await measure_dom_confidence(page)).score
    # Scoped to the bar: six unnamed controls (x0.4), six bare icons (x0.4), nothing else said (x0.5).
    assert scoped.dom_confidence == pytest.approx(0.08) != measured.dom_confidence


async def test_the_measure_does_not_depend_on_chromes_computed_accessibility_info(page, server) -> None:
    """Roles and names come from the library's own rules: a page without Chrome's computedRole
    (a browser the user launched) measures the same."""
    expected = {
        "vision/toolbar.html": (6, 6, 6),
        "vision/toolbar.html?labelled": (6, 0, 0),
        "vision.html": (4, 2, 2),
        "forms.html": (12, 0, 0),
    }
    for path, counts in expected.items():
        await page.goto(server.url(path))
        await page.evaluate("() => { delete Element.prototype.computedRole; delete Element.prototype.computedName; }")
        measured = await measure_dom_confidence(page)
        assert (measured.interactive, measured.unnamed, measured.graphics) == counts, path


def test_a_malformed_measurement_is_reported_with_its_value() -> None:
    with pytest.raises(InvalidArgumentError, match="not a DOM-confidence measurement: {'score': 1}"):
        parse_confidence({"score": 1})
