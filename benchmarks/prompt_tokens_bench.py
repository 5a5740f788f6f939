"""Model calls and prompt tokens per extract on large pages, beside Stagehand 3.7.3's prompt size.

    python benchmarks/prompt_tokens_bench.py [--budget 16000] [--ts-dir /tmp/ts-stagehand-perc]

Cases (each page served on 127.0.0.1, launched Chromium, no network, no API key):

- lookup:  one named row of a 5,000-row table ("the price of the row labelled 'Widget 4321'")
- top:     a value at the top of a long page (the Python docs' stdtypes.html: its title)
- bottom:  a value at its bottom (the copyright notice)
- list:    every row of a 200-row list (needs every part)

The model is a FunctionLLM answering as a good model would: the value when the part shown holds
it (then ``instruction_satisfied``), nothing otherwise; for the list, the rows shown and "not
satisfied" until it has seen the last part. Printed per case: calls, the largest and the total
prompt tokens (messages + schema, chars/4, as the budget counts them), the page's outline
tokens, and TS Stagehand 3.7.3's: its ``page.snapshot()`` outline tokens (chars/4) for the same
URL, which its extract sends whole in one call (plus its own instructions, not counted here).
The TS column needs ``--ts-dir`` (a folder where ``npm install @browserbasehq/stagehand@3.7.3``
ran); without it the column shows "-".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from _browser import CHROMIUM_ARGS, CHROMIUM_EXECUTABLE
from _server import StaticServer

from stagehand_py import Stagehand
from stagehand_py.llm._messages import message_text
from stagehand_py.snapshot import estimate_tokens
from stagehand_py.testing import FunctionLLM

DOCS = Path("/usr/share/doc/python3-doc/html")
TS_SCRIPT = HERE / "ts_snapshot.mjs"


def _table(rows: int) -> str:
    body = "".join(f"<tr><td>Widget {i}</td><td>SKU-{i:05d}</td><td>${(i * 37) % 1000}.{i % 100:02d}</td>"
                   f"<td>{(i * 13) % 250} in stock</td></tr>" for i in range(rows))
    return ("<!DOCTYPE html><html><head><title>Inventory</title></head><body><h1>Inventory</h1><table>"
            f"<thead><tr><th>Item</th><th>SKU</th><th>Price</th><th>Stock</th></tr></thead><tbody>{body}</tbody>"
            "</table></body></html>")


def _list(rows: int) -> str:
    items = "".join(f"<li>Product {i} — ${10 + i}.00</li>" for i in range(rows))
    return f"<!DOCTYPE html><html><head><title>Catalogue</title></head><body><h1>Catalogue</h1><ul>{items}</ul></body></html>"


def _string(name: str) -> dict:
    return {"type": "object", "properties": {name: {"type": "string"}}, "required": [name]}


LIST = {"type": "object", "properties": {"products": {"type": "array", "items": {"type": "string"}}},
        "required": ["products"]}


def _shown(request) -> str:
    return next(message_text(m) for m in request.messages if m.role == "user")


def good_model(request):
    """A good model: answers from the part shown, satisfied once it holds the value."""
    user = _shown(request)
    outline = user.split("Page content", 1)[1]
    field = next(iter(request.output_schema["properties"]["data"]["properties"]))
    if field == "products":
        part = re.search(r"\(part (\d+) of (\d+)\)", user)
        last = part is None or part.group(1) == part.group(2)
        names = re.findall(r"StaticText: (Product \d+) —", outline)
        return {"data": {"products": names}, "instruction_satisfied": last}
    patterns = {
        "price": r"cell: Widget 4321\n\s*\[\S+\] cell: SKU-04321\n\s*\[\S+\] cell: (\$[\d.]+)",
        "title": r"\] heading: (Built-in Types)\n",
        "copyright": r"StaticText: ©\n\s*\[\S+\] link: Copyright\n\s*\[\S+\] StaticText: ([^\n]+)",
    }
    m = re.search(patterns[field], outline)
    return {"data": {field: m.group(1).strip() if m else ""}, "instruction_satisfied": bool(m)}


def request_tokens(request) -> int:
    text = "\n".join(message_text(m) for m in request.messages)
    return estimate_tokens(text + json.dumps(request.output_schema or {}, indent=2, sort_keys=True))


def ts_tokens(ts_dir: str | None, url: str) -> int | None:
    if not ts_dir or not (Path(ts_dir) / "node_modules/@browserbasehq/stagehand").is_dir():
        return None
    out = subprocess.run(["node", str(TS_SCRIPT), "--stagehand-dir", ts_dir, "--url", url, "--executable",
                          CHROMIUM_EXECUTABLE, "--chromium-args", json.dumps(CHROMIUM_ARGS), "--runs", "1"],
                         capture_output=True, text=True, timeout=600)
    line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
    return json.loads(line[len("RESULT "):])["chars"] // 4 if line else None


async def run(opts: argparse.Namespace) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="prompt-bench-"))
    (scratch / "table.html").write_text(_table(5000))
    (scratch / "list.html").write_text(_list(200))
    generated = StaticServer(scratch).start()
    docs = StaticServer(DOCS).start() if (DOCS / "library/stdtypes.html").is_file() else None
    cases = [
        ("lookup: 1 row of 5,000", generated.url("table.html"), "the price of the row labelled 'Widget 4321'", _string("price")),
        ("list: all 200 rows", generated.url("list.html"), "every product name in the list", LIST),
    ]
    if docs is not None:
        cases[1:1] = [
            ("top of a long page", docs.url("library/stdtypes.html"), "the title at the top of the page", _string("title")),
            ("bottom of a long page", docs.url("library/stdtypes.html"), "the copyright notice at the bottom of the page",
             _string("copyright")),
        ]
    rows = []
    model = FunctionLLM(good_model)
    try:
        async with await Stagehand.launch(model=model, token_budget=opts.budget) as sh:
            for label, url, instruction, schema in cases:
                await sh.page.goto(url)
                outline = (await sh.snapshot()).tokens
                start = len(model.requests)
                value = await sh.extract(instruction, schema)
                sizes = [request_tokens(r) for r in model.requests[start:]]
                shown = json.dumps(value)[:40]
                rows.append((label, f"{outline:,}", str(len(sizes)), f"{max(sizes):,}", f"{sum(sizes):,}",
                             f"{sum(sizes) / opts.budget:.2f}", ts_tokens(opts.ts_dir, url), shown))
    finally:
        generated.stop()
        if docs is not None:
            docs.stop()
    head = ("case", "outline tok", "calls", "max prompt tok", "total prompt tok", "budgets", "TS 3.7.3 prompt tok (1 call)",
            "answer")
    table = [head] + [(*r[:6], f"≥ {r[6]:,}" if r[6] else "-", r[7]) for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    print(f"\ntoken_budget={opts.budget:,}; budgets = total prompt tokens / token_budget; tokens are chars/4 estimates. "
          "TS: its page.snapshot() outline, which its extract sends whole (its instructions not counted).")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", type=int, default=16_000)
    parser.add_argument("--ts-dir", default=None, help="folder with @browserbasehq/stagehand@3.7.3 installed")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
