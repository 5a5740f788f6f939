"""``stagehand-py show PATH``: what a run did, from its ``run.html``, in the terminal or the browser.

::

    stagehand-py show stagehand-artifacts/test_login.py__test_sign_in      # a failed test's folder
    stagehand-py show evidence/run_20261128T101500Z/row-1/run.html --open  # one page, in the browser
    stagehand-py show evidence/run_20261128T101500Z                        # a batch run: every row

PATH is a ``run.html``, a folder holding one, or a batch run folder (its rows' pages are listed).
The text comes from the summary the page embeds; ``--open`` opens the page with the system's
browser (``webbrowser``), which needs no server: the page is a file.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import webbrowser
from pathlib import Path
from typing import Any

__all__ = ["main", "read_summary"]

_SUMMARY = re.compile(r'<script type="application/json" id="stagehand-run">(.*?)</script>', re.S)


def read_summary(page: Path) -> dict[str, Any] | None:
    """The summary ``page`` (a ``run.html``) embeds, or None when it has none."""
    found = _SUMMARY.search(page.read_text(encoding="utf-8", errors="replace"))
    if found is None:
        return None
    try:
        data = json.loads(found.group(1))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _money(cost: object) -> str:
    return f"${cost:.4f}" if isinstance(cost, int | float) else "cost unknown"


def _describe(page: Path, summary: dict[str, Any]) -> list[str]:
    steps = summary.get("steps") or []
    status = f" — {summary['status']}" if summary.get("status") else ""
    lines = [f"{page}", f"{summary.get('title') or 'run'}{status} — {len(steps)} steps, {summary.get('seconds', 0):.1f} s, "
                        f"{summary.get('tokens', 0):,} tokens, {_money(summary.get('cost_usd'))}"]
    if summary.get("message"):
        lines.append(f"  {summary['message']}")
    for step in steps:
        state = "no result" if step.get("ok") is None else "ok" if step["ok"] else "FAILED"
        lines.append(f"  #{step['step']:<3} {state:<9} {step.get('seconds', 0):6.2f} s {step.get('tokens', 0):>7,} tok "
                     f"{_money(step.get('cost_usd')):>12}  {step.get('title', '')}")
    return lines


def _pages(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if (path / "run.html").is_file():
        return [path / "run.html"]
    return sorted(path.glob("*/run.html"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="stagehand-py show", description="print (or open) a run's run.html")
    parser.add_argument("path", type=Path, help="a run.html, a folder holding one, or a batch run folder")
    parser.add_argument("--open", action="store_true", help="open the page in the system's browser")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    pages = _pages(args.path)
    if not pages:
        print(f"error: no run.html at {args.path} (nor in a folder inside it)", file=sys.stderr)
        return 2
    for page in pages:
        summary = read_summary(page)
        print("\n".join(_describe(page, summary) if summary is not None else [f"{page}: not a stagehand_py run.html"]))
    report = args.path / "report.html" if args.path.is_dir() else None
    target = report if report is not None and report.is_file() and len(pages) > 1 else pages[0]
    if args.open:
        webbrowser.open(target.resolve().as_uri())
    else:
        print(f"open it: {target.resolve().as_uri()}  (or: stagehand-py show {args.path} --open)")
    return 0
