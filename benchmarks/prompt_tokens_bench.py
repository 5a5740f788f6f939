"""Prompt tokens per observe/extract on large pages, next to the size of the whole snapshot.

    python benchmarks/prompt_tokens_bench.py [--pages json,stdtypes,genindex] [--budget 16000]
                                            [--snapshot-json FILE]

Serves the Python docs (/usr/share/doc/python3-doc/html) on 127.0.0.1 and runs, on each page:

- observe("<a specific link>")           ranked chunks, stops at the first part with a match
- extract("the page title", schema)      the model says "satisfied" on the first part
- extract("every heading", schema)        never satisfied: reads every part (worst case)

with a FunctionLLM that records every request's estimated prompt tokens (messages + schema,
chars/4, like the budget). Printed per operation: model calls, the largest and the total
prompt tokens, next to the full snapshot's tokens (ours) and, when ``--snapshot-json`` (the
``--json`` output of snapshot_bench.py) has it, the TS Stagehand snapshot's tokens.
No network, no API key.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from _server import StaticServer

from stagehand_py import Stagehand
from stagehand_py.llm._messages import message_text
from stagehand_py.snapshot import estimate_tokens
from stagehand_py.testing import FunctionLLM

DOCS = Path("/usr/share/doc/python3-doc/html")
PAGES = {"json": "library/json.html", "stdtypes": "library/stdtypes.html", "genindex": "genindex-all.html"}
OBSERVE = {"json": "the link to json.dumps", "stdtypes": "the link to str.split", "genindex": "the link to zipfile"}
TITLE = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
HEADINGS = {"type": "object", "properties": {"headings": {"type": "array", "items": {"type": "string"}}}, "required": ["headings"]}


def request_tokens(request) -> int:
    text = "\n".join(message_text(m) for m in request.messages)
    return estimate_tokens(text + json.dumps(request.output_schema or {}, indent=2, sort_keys=True))


def answer(request):
    """A stand-in model: picks the first link for observe, says 'satisfied' only for the title."""
    if request.purpose == "observe":
        user = next(message_text(m) for m in request.messages if m.role == "user")
        m = re.search(r"\[(\d+-\d+)\] link:", user)
        return {"elements": [{"element_id": m.group(1), "description": "a link", "method": "click", "arguments": []}] if m else []}
    if "title" in request.output_schema["properties"]["data"].get("properties", {}):
        return {"data": {"title": "x"}, "instruction_satisfied": True}
    return {"data": {"headings": []}, "instruction_satisfied": False}


async def run(opts: argparse.Namespace) -> None:
    ts_sizes: dict[str, int] = {}
    if opts.snapshot_json and Path(opts.snapshot_json).is_file():
        raw = json.loads(Path(opts.snapshot_json).read_text())
        ts_sizes = {p: row["ts"]["chars"] // 4 for p, row in raw.items() if row.get("ts", {}).get("chars")}
    server = StaticServer(DOCS).start()
    sh = None
    rows = []
    try:
        model = FunctionLLM(answer)
        sh = await Stagehand.launch(model=model, token_budget=opts.budget)
        for name in opts.pages.split(","):
            await sh.page.goto(server.url(PAGES[name]))
            snap = await sh.snapshot()
            ops = [
                (f"observe({OBSERVE[name]!r})", lambda n=name: sh.observe(OBSERVE[n])),
                ("extract(title)", lambda: sh.extract("the page title", TITLE)),
                ("extract(all headings)", lambda: sh.extract("every section heading", HEADINGS)),
            ]
            for label, op in ops:
                start = len(model.requests)
                await op()
                sizes = [request_tokens(r) for r in model.requests[start:]]
                rows.append((name, snap.tokens, ts_sizes.get(name), label, len(sizes), max(sizes), sum(sizes)))
    finally:
        if sh is not None:
            await sh.close()
        server.stop()
    head = ("page", "snapshot tok (ours)", "TS snapshot tok", "operation", "calls", "max prompt tok", "total prompt tok")
    table = [head] + [(p, f"{s:,}", f"{t:,}" if t else "-", op, str(c), f"{m:,}", f"{tot:,}") for p, s, t, op, c, m, tot in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    print(f"\ntoken_budget={opts.budget:,} (max prompt tokens of any one call); tokens are chars/4 estimates.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", default=",".join(PAGES))
    parser.add_argument("--budget", type=int, default=16_000)
    parser.add_argument("--snapshot-json", default=str(REPO / ".bench" / "snapshot.json"),
                        help="snapshot_bench.py --json output, for the TS column")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
