"""Extract with the embedded model: choice mode (values read from the lines it picks) vs the
plain schema (values the model writes), on a table, a facet list and a detail page.

    python benchmarks/local_extract_modes.py                    # both modes, both page kinds
    python benchmarks/local_extract_modes.py --modes schema     # the plain schema only

The pages are tests/assets/extract/*.html with their schemas and values in tests/_extract_pages.py
(the ones the scripted tests use), served on 127.0.0.1. Each extract runs once per mode and page kind (a page the benchmark launched and
wrapped, one ``Stagehand.launch()`` started) with the same loaded model at temperature 0; every
field of the answer is compared with the page's own value. Prints one line per extract (fields
right of fields asked, seconds, the repairs of ``extract(report=True)``) and a table; writes
.bench/local_extract_modes.json.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _extract_pages import GENERATED, PAGES, leaves, with_urls
from _local_bench import add_model_options, finish, load, markdown_table, open_model, stagehand_for
from _server import StaticServer
from playwright.async_api import async_playwright

from stagehand_py import StagehandError
from stagehand_py.llm import LLMClient

ASSETS = ROOT / "tests" / "assets"


def score(got: dict[str, Any] | None, expected: dict[str, Any]) -> tuple[int, int, list[str]]:
    """(fields right, fields expected, the wrong ones): an absent optional field counts as None; a
    field that asks for the model's own words is right when it holds some."""
    want = dict(leaves(expected))
    have = dict(leaves(got)) if got is not None else {}
    wrong = [f"{path}={have.get(path)!r} (want {value!r})" for path, value in want.items()
             if (not str(have.get(path) or "").strip() if path in GENERATED else str(have.get(path)) != str(value))]
    extra = [f"{path}={value!r} (not expected)" for path, value in have.items() if path not in want]
    return len(want) - len(wrong), len(want), wrong + extra


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_model_options(parser)
    parser.add_argument("--modes", default="schema,choice", help="comma-separated: schema, choice")
    parser.add_argument("--kinds", default="launched,wrapped", help="comma-separated: launched, wrapped")
    parser.add_argument("--out", default=str(ROOT / ".bench" / "local_extract_modes.json"))
    args = parser.parse_args()
    _, model = open_model(args)
    rows: list[list[object]] = []
    results: list[dict[str, Any]] = []
    with StaticServer(ASSETS) as server:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
            for mode in args.modes.split(","):
                client = LLMClient(model, choice_mode=(mode == "choice"))
                for kind in args.kinds.split(","):
                    for task in PAGES:
                        sh = await stagehand_for(kind, browser, client, args.token_budget)
                        try:
                            await sh.page.goto(server.url(task.file))
                            began = time.perf_counter()
                            error, repairs = "", ""
                            try:
                                result = await sh.extract(task.instruction, schema=task.schema, report=True)
                                data = result.data.model_dump(mode="json")
                                repairs = ", ".join(f"{r.kind} {r.outcome}" for r in result.repairs)
                            except StagehandError as exc:
                                data, error = None, f"{type(exc).__name__}: {str(exc)[:160]}"
                            seconds = time.perf_counter() - began
                        finally:
                            await sh.close()
                        right, total, wrong = score(data, with_urls(task.data, server.prefix))
                        print(f"{mode:6} {kind:8} {task.name:7} {right}/{total} right in {seconds:.1f} s"
                              + (f"  wrong: {'; '.join(wrong)}" if wrong else "") + (f"  {error}" if error else "")
                              + (f"  repairs: {repairs}" if repairs else ""), flush=True)
                        rows.append([mode, kind, task.name, f"{right}/{total}", f"{seconds:.1f}", repairs])
                        results.append({"mode": mode, "kind": kind, "task": task.name, "right": right, "total": total,
                                        "seconds": round(seconds, 1), "wrong": wrong, "error": error, "repairs": repairs,
                                        "data": data})
            await browser.close()
    await model.aclose()
    finish(markdown_table(["mode", "kind", "page", "fields right", "seconds", "repairs"], rows), Path(args.out),
           {"when": time.strftime("%Y-%m-%d %H:%M"), "load": load(), "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
