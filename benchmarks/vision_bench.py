"""Annotated screenshots: bytes and estimated image tokens per screenshot, and time to produce one.

    python benchmarks/vision_bench.py [--runs 5] [--viewport 1280x720] [--pages vision,toolbar,...]

Per page: the snapshot's DOM confidence, the number of boxes, the image's size and format,
bytes, estimated input tokens (Anthropic w*h/750; OpenAI high-detail tiles), and the median ms
of ``annotated_screenshot`` (box measuring + screenshot + drawing + encoding; the snapshot it
annotates is taken once, outside the timing). Pages are served from 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from _browser import launch_chromium  # noqa: E402  (tests/_browser.py: same flags as the tests)
from _server import StaticServer  # noqa: E402
from playwright.async_api import async_playwright  # noqa: E402

from stagehand_py._stagehand import Stagehand  # noqa: E402
from stagehand_py._vision import annotated_screenshot, estimate_image_tokens  # noqa: E402

DOCS = Path("/usr/share/doc/python3-doc/html")
# name -> ("assets" | "docs", path)
PAGES = {
    "vision": ("assets", "vision.html"),
    "toolbar": ("assets", "vision/toolbar.html"),
    "dashboard": ("assets", "vision/dashboard.html"),
    "forms": ("assets", "forms.html"),
    "json": ("docs", "library/json.html"),
    "stdtypes": ("docs", "library/stdtypes.html"),
}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--viewport", default="1280x720")
    parser.add_argument("--pages", default=",".join(PAGES))
    args = parser.parse_args()
    width, height = (int(v) for v in args.viewport.split("x"))
    assets = StaticServer().start()
    docs = StaticServer(root=DOCS).start() if DOCS.exists() else None
    header = f"{'page':<10} {'conf':>5} {'boxes':>5} {'image':>10} {'fmt':>4} {'bytes':>8} {'tok(anth)':>9} {'tok(oai)':>8} {'ms(med)':>8}"
    print(header)
    print("-" * len(header))
    async with async_playwright() as pw:
        browser = await launch_chromium(pw)
        try:
            for name in args.pages.split(","):
                where, path = PAGES[name]
                if where == "docs" and docs is None:
                    print(f"{name:<10} skipped: Python docs missing (apt-get install -y python3-doc)")
                    continue
                page = await browser.new_page(viewport={"width": width, "height": height})
                await page.goto((assets if where == "assets" else docs).url(path))
                async with Stagehand(page) as sh:
                    snapshot = await sh.snapshot(confidence=True)
                    shot = await annotated_screenshot(page, snapshot)  # warm-up
                    times = []
                    for _ in range(args.runs):
                        started = time.perf_counter()
                        shot = await annotated_screenshot(page, snapshot)
                        times.append((time.perf_counter() - started) * 1000)
                await page.close()
                print(f"{name:<10} {snapshot.dom_confidence:>5.2f} {len(shot.boxes):>5} {shot.width:>5}x{shot.height:<4} "
                      f"{shot.media_type.split('/')[1]:>4} {len(shot.data):>8} {shot.tokens:>9} "
                      f"{estimate_image_tokens(shot.width, shot.height, provider='openai'):>8} {statistics.median(times):>8.0f}")
        finally:
            await browser.close()
            assets.stop()
            if docs is not None:
                docs.stop()


if __name__ == "__main__":
    asyncio.run(main())
