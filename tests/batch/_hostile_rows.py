"""Twenty rows a user's real spreadsheet and real sites could give the batch runner, for
tests/batch/test_hostile_batch.py and for running by hand.

The rows (``rows.csv``: a BOM, CRLF line ends, blank lines in the middle):

- ``p01``..``p13``: product pages; the agent reads the heading and finishes (done);
- ``c14``: the task raises ``asyncio.CancelledError`` itself; ``c15``: the task cancels its own
  asyncio task (both: that row's error, the batch goes on);
- ``big16``: a 2,000,000-character cell (over the default 1,000,000 bound: that row's error);
- ``short17``: fewer cells than the header; ``long20``: more (each: that row's error);
- ``d18``: two downloads named ``report 1.txt`` and ``report_1.txt`` (both kept, apart);
- ``d19``: a download with a 300-character name (kept, shortened, still a ``.pdf``).

The agent is stagehand_py's own (``make_agent_runner``) with a scripted model: it clicks every
``Download`` link on the page, then finishes with the page's heading.

By hand: ``python tests/batch/_hostile_rows.py <folder>`` starts the 127.0.0.1 server, writes the
rows and the task there, runs ``stagehand-py run`` on them and prints its output.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from stagehand_py.batch import SampleContext, SampleOutcome
from stagehand_py.batch._agent_runner import make_agent_runner
from stagehand_py.llm import LLMRequest, TextPart
from stagehand_py.testing import FunctionLLM

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

LONG_NAME = ("Quarterly revenue by region and product line " * 7)[:296].strip() + ".pdf"
#: The files the download pages serve: (route, suggested name, bytes).
FILES = [
    ("/hostile/files/a", "report 1.txt", b"first report: 1,2,3\n"),
    ("/hostile/files/b", "report_1.txt", b"second report, not the first: 4,5,6\n"),
    ("/hostile/files/long", LONG_NAME, b"%PDF-1.4 pretend pdf with a very long name\n"),
]
assert len(LONG_NAME) == 300, len(LONG_NAME)
BIG_CELL = "x" * 2_000_000
TASK = {"goal": "Record the page heading and download every file offered", "output_schema": {"type": "object"},
        "required_fields": ["heading"], "max_steps": 6, "max_time": 120}


def _download_page(title: str, links: list[tuple[str, str]]) -> str:
    anchors = "".join(f'<p><a href="{href}" onclick="this.textContent=\'fetched\'">Download {label}</a></p>'
                      for href, label in links)
    return f"<!DOCTYPE html><html><body><h1>{title}</h1>{anchors}</body></html>"


@contextlib.contextmanager
def hostile_routes(server: Any) -> Iterator[Any]:
    """The download pages and files on the test server, while the block runs."""
    from _server import Response

    def serve(name: str, data: bytes) -> Any:
        return lambda request: Response(200, data, "application/octet-stream",
                                        {"Content-Disposition": f'attachment; filename="{name}"'})

    routes = [server.route(route, serve(name, data)) for route, name, data in FILES]
    routes.append(server.route("/hostile/collide.html", lambda r: Response.html(
        _download_page("Two reports", [("/hostile/files/a", "report A"), ("/hostile/files/b", "report B")]))))
    routes.append(server.route("/hostile/long.html", lambda r: Response.html(
        _download_page("A long name", [("/hostile/files/long", "the annual summary")]))))
    try:
        yield server
    finally:
        for route in routes:
            route.remove()


def write_inputs(folder: Path, server: Any) -> tuple[Path, Path]:
    """``task.json`` and ``rows.csv`` (raw bytes: a BOM, CRLF, blank lines) in ``folder``."""
    lines = ["id,url,behaviour,note"]
    for i in range(1, 14):
        lines.append(f"p{i:02d},{server.url(f'products/{i % 6 + 1}.html')},,\"row {i}, with a comma\"")
        if i == 5:
            lines += ["", ",,,"]  # a blank line and a line of empty cells
    lines.append(f"c14,{server.url('products/1.html')},raise_cancelled,")
    lines.append(f"c15,{server.url('products/2.html')},cancel_own_task,")
    lines.append(f"big16,{server.url('products/3.html')},,{BIG_CELL}")
    lines.append(f"short17,{server.url('products/4.html')}")
    lines.append(f"d18,{server.url('hostile/collide.html')},,")
    lines.append("")
    lines.append(f"d19,{server.url('hostile/long.html')},,")
    lines.append(f"long20,{server.url('products/5.html')},,note,an extra cell")
    rows = folder / "rows.csv"
    rows.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode("utf-8") + b"\r\n")
    task = folder / "task.json"
    task.write_text(json.dumps(TASK))
    return task, rows


def _step(tool: str, **args: Any) -> dict[str, Any]:
    return {"evaluation_previous_step": "ok", "memory": "", "next_goal": tool, "action": {"tool": tool, "args": args}}


def scripted_agent(request: LLMRequest) -> dict[str, Any]:
    """Stateless (rows share it): click the first ``Download`` link left, else finish with the heading."""
    text = "\n".join(p.text for m in request.messages for p in m.content if isinstance(p, TextPart))
    outline = text.rsplit("heading: ", 1)
    link = re.findall(r"\[(\d+-\d+)\] link: Download", outline[-1])
    if link:
        return _step("act", element_id=link[0], method="click")
    heading = re.findall(r"heading: (.+)", text)[-1].strip()
    return _step("done", message="recorded", output={"heading": heading})


async def act_up(behaviour: str) -> None:
    """What a misbehaving task does: ``raise_cancelled`` raises CancelledError, ``cancel_own_task``
    cancels the asyncio task it runs in; anything else does nothing."""
    if behaviour == "raise_cancelled":
        raise asyncio.CancelledError("the task gave up")
    if behaviour == "cancel_own_task":
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        await asyncio.sleep(60)


def make_runner(*, model: Any = None) -> Any:
    agent = make_agent_runner(model=FunctionLLM(scripted_agent))

    async def run(ctx: SampleContext) -> SampleOutcome:
        await act_up(ctx.sample.data.get("behaviour", ""))
        outcome: SampleOutcome = await agent(ctx)
        return outcome

    return run


def run_cli(folder: Path, *extra: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """``stagehand-py run`` on the rows in ``folder`` (evidence in ``folder/evidence``)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(folder), "PYTHONPATH": f"{ROOT}:{HERE}:{HERE.parent}",
           "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}  # a Ray cluster it starts binds to 127.0.0.1 only
    return subprocess.run(
        [sys.executable, "-m", "stagehand_py.batch._cli", "run", "--task", "task.json", "--samples", "rows.csv",
         "--runner", "_hostile_rows:make_runner", "--rate-limit", "0", "--concurrency", "3", "--no-progress", *extra],
        cwd=folder, env=env, capture_output=True, text=True, timeout=timeout, check=False,
    )


if __name__ == "__main__":  # by hand: python tests/batch/_hostile_rows.py <folder>
    sys.path[:0] = [str(HERE.parent)]
    from _server import StaticServer

    target = Path(sys.argv[1]).resolve()
    target.mkdir(parents=True, exist_ok=True)
    with StaticServer() as static, hostile_routes(static):
        write_inputs(target, static)
        done = run_cli(target)
    print(done.stdout, end="")
    print(done.stderr, end="", file=sys.stderr)
    sys.exit(done.returncode)
