"""Discovery: collect sample URLs from a listing page (no model call: links and a pattern)."""

from __future__ import annotations

import re
from typing import Any

from ._spec import Discovery, Sample, sample_id_for_url

__all__ = ["discover_samples"]

_LINKS_JS = "() => Array.from(document.querySelectorAll('a[href]'), a => a.href)"


async def discover_samples(browser: Any, discovery: Discovery) -> list[Sample]:
    """Open ``discovery.url`` in a context of its own and turn its matching links into samples."""
    pattern = re.compile(discovery.link_pattern)
    context = await browser.new_context()
    try:
        page = await context.new_page()
        await page.goto(discovery.url, wait_until="domcontentloaded")
        hrefs: list[str] = await page.evaluate(_LINKS_JS)
    finally:
        await context.close()
    urls = [u.split("#", 1)[0] for u in hrefs if u.startswith(("http://", "https://")) and pattern.search(u)]
    samples: list[Sample] = []
    seen_ids: set[str] = set()
    for url in dict.fromkeys(urls):
        sample_id, n = sample_id_for_url(url), 2
        while sample_id in seen_ids:
            sample_id, n = f"{sample_id_for_url(url)}_{n}", n + 1
        seen_ids.add(sample_id)
        samples.append(Sample(id=sample_id, url=url))
        if discovery.limit is not None and len(samples) >= discovery.limit:
            break
    return samples
