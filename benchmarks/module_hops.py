"""How many times one ``extract()`` and one ``act()`` cross from one stagehand_py module to another.

A maintainer following a verb from the public method to the browser and back reads one module
per hop; this counts them. ``sys.setprofile`` sees every Python call while the verb runs; a
*hop* is a new call into a function of stagehand_py module B whose nearest stagehand_py caller
is in module A != B (``_stagehand`` -> ``_operations.extract`` is one; a call within one module,
a coroutine resuming, a library (Playwright, pydantic, asyncio) in between are not, nor code
generated at run time, such as a dataclass's ``__init__``: constructing a record is no hop, whether
the record is a dataclass or a pydantic model). It also
reports the distinct modules the verb ran code of, the distinct A -> B edges, and the calls
back into the facade: hops into ``stagehand_py._stagehand`` from a module it called (an
operation asking its Stagehand for a snapshot or a client; the tracing wrapper running the verb's
own operation is one of them too).

Calls with no stagehand_py caller (a task started by ``asyncio.gather``, a Playwright event
handler) count as *entries*, not hops: their caller is the event loop. The model is scripted
(FunctionLLM) and the page is served from 127.0.0.1, so the counts depend on the code only (and
a little on timing: a settle loop that polls once more is a few more hops; hence the median).

Run it against any checkout (the counts are of whatever ``stagehand_py`` is imported)::

    PYTHONPATH=/path/to/checkout /work/main/.venv/bin/python benchmarks/module_hops.py
    PYTHONPATH=/path/to/checkout python benchmarks/module_hops.py --runs 5 --kind wrapped --edges

Options: ``--runs N`` (measured calls per verb after one warm-up call, default 3), ``--kind``
``launched`` (``Stagehand.launch()``, default) or ``wrapped`` (``Stagehand(page)`` on a page
launched with plain Playwright), ``--edges`` (print each verb's A -> B edges with their counts),
``--json FILE`` (the raw numbers).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

# The tests' loopback server and Chromium flags (this repository's, whichever stagehand_py is measured).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _browser import launch_chromium  # noqa: E402
from _server import Response, StaticServer  # noqa: E402

PACKAGE = "stagehand_py"
FACADE = "stagehand_py._stagehand"

PAGE = """<!DOCTYPE html><html><head><title>Shop</title></head><body>
<h1>Products</h1>
<table><tr><th>Name</th><th>Price</th></tr>
<tr><td>Desk lamp</td><td>$24.00</td></tr><tr><td>Office chair</td><td>$89.99</td></tr></table>
<form onsubmit="event.preventDefault(); document.getElementById('log').textContent = 'signed in'">
<label>Email <input name="email"></label><button>Sign in</button></form>
<p id="log">not signed in</p>
</body></html>"""

SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "cheapest": {"type": "string"}},
    "required": ["title", "cheapest"],
}


@dataclass
class Count:
    hops: int = 0
    entries: int = 0
    modules: set[str] = field(default_factory=set)
    edges: Counter[tuple[str, str]] = field(default_factory=Counter)


def _module(frame: FrameType) -> str | None:
    if frame.f_code.co_filename.startswith("<"):
        # Code generated at run time (a dataclass's __init__/__eq__, exec'd by the dataclasses
        # module with the class's module as globals) is no function written in that module: like a
        # library's, it is passed through (a pydantic model's or a named tuple's is not counted either).
        return None
    name = frame.f_globals.get("__name__", "")
    return name if name == PACKAGE or name.startswith(PACKAGE + ".") else None


class HopCounter:
    """Counts module hops while active (see the module docstring)."""

    def __init__(self) -> None:
        self.count = Count()
        self._seen: set[FrameType] = set()  # frames already entered: a later 'call' is a resume

    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        callee = _module(frame)
        if callee is None or frame in self._seen:
            return
        self._seen.add(frame)
        self.count.modules.add(callee)
        caller_frame = frame.f_back
        while caller_frame is not None and _module(caller_frame) is None:
            caller_frame = caller_frame.f_back
        if caller_frame is None:
            self.count.entries += 1
            return
        caller = _module(caller_frame)
        assert caller is not None
        if caller != callee:
            self.count.hops += 1
            self.count.edges[(caller, callee)] += 1

    def __enter__(self) -> HopCounter:
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(None)
        self._seen.clear()


def _model(request: Any) -> dict[str, Any]:
    """The scripted model: extract's data, act's "Sign in" button.

    It reads the request's text itself, with no stagehand_py helper: a call from here into the
    package would count as a hop of the verb (its nearest package caller is the test double).
    """
    text = "\n".join(getattr(part, "text", "") for m in request.messages for part in m.content)
    if request.purpose == "extract":
        return {"data": {"title": "Products", "cheapest": "$24.00"}, "instruction_satisfied": True}
    found = re.search(r"\[(\d+-\d+)\] button: Sign in", text)
    assert found, "no Sign in button in the act prompt"
    return {"elements": [{"element_id": found.group(1), "description": "Sign in button", "method": "click",
                          "arguments": []}], "opens_options": False}


async def _measure(kind: str, runs: int) -> dict[str, list[Count]]:
    from playwright.async_api import async_playwright

    from stagehand_py import Stagehand
    from stagehand_py.testing import FunctionLLM

    server = StaticServer().start()
    server.route("/shop.html", lambda request: Response.html(PAGE))
    url = server.url("shop.html")
    results: dict[str, list[Count]] = {"extract": [], "act": []}
    async with async_playwright() as pw:
        browser = None
        if kind == "wrapped":
            browser = await launch_chromium(pw)
            sh = Stagehand(await browser.new_page(), model=FunctionLLM(_model))
        else:
            sh = await Stagehand.launch(model=FunctionLLM(_model), _playwright=pw)
        try:
            await sh.page.goto(url)
            for verb in ("extract", "act"):
                for n in range(runs + 1):  # the first call warms up (imports, the walker's install)
                    await sh.page.goto(url)
                    with HopCounter() as counter:
                        if verb == "extract":
                            await sh.extract("the page title and the cheapest price", SCHEMA)
                        else:
                            await sh.act("click Sign in")
                    if n:
                        results[verb].append(counter.count)
        finally:
            await sh.close()
            if browser is not None:
                await browser.close()
            server.stop()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--kind", choices=("launched", "wrapped"), default="launched")
    parser.add_argument("--edges", action="store_true")
    parser.add_argument("--json", dest="json_path")
    args = parser.parse_args(argv)
    import stagehand_py

    results = asyncio.run(_measure(args.kind, args.runs))
    print(f"stagehand_py from {stagehand_py.__file__}; {args.kind} page; {args.runs} measured call(s) per verb")
    print("| verb | module hops (median; each run) | distinct modules | distinct edges | calls back into _stagehand "
          "| entries from the loop |")
    print("|---|---|---|---|---|---|")
    for verb, counts in results.items():
        hops = [c.hops for c in counts]
        print(f"| {verb}() | {statistics.median(hops):g} ({', '.join(map(str, hops))}) | "
              f"{statistics.median(len(c.modules) for c in counts):g} | "
              f"{statistics.median(len(c.edges) for c in counts):g} | "
              f"{statistics.median(sum(n for (_, b), n in c.edges.items() if b == FACADE) for c in counts):g} | "
              f"{statistics.median(c.entries for c in counts):g} |")
    if args.edges:
        for verb, counts in results.items():
            print(f"\n{verb}() edges (last run):")
            for (a, b), n in sorted(counts[-1].edges.items()):
                print(f"  {n:4d}  {a.removeprefix(PACKAGE + '.')} -> {b.removeprefix(PACKAGE + '.')}")
    if args.json_path:
        raw = {verb: [{**asdict(c), "modules": sorted(c.modules),
                       "edges": [[a, b, n] for (a, b), n in sorted(c.edges.items())]} for c in counts]
               for verb, counts in results.items()}
        with open(args.json_path, "w", encoding="utf-8") as out:
            json.dump(raw, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
