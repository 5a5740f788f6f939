"""What the embedded-model benchmarks share: the model file and its options, the load average
line, a Stagehand on either page kind, the JSON log and the closing table."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from playwright.async_api import Browser

from stagehand_py import Stagehand
from stagehand_py.llm import LLMClient, LocalModel
from stagehand_py.llm._providers._local import models_dir

DEFAULT_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


def model_path(given: str | None) -> Path:
    """``--model``'s path, else the pinned model in the models folder."""
    return Path(given) if given else (models_dir() or Path(".")) / DEFAULT_MODEL


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """``--model``, ``--threads``, ``--n-ctx`` and ``--token-budget``, read by open_model() and the Stagehands."""
    parser.add_argument("--model", default=None, help=f"a .gguf path (default: {DEFAULT_MODEL} in the models folder)")
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: its own choice)")
    parser.add_argument("--n-ctx", type=int, default=8192, help="the model's context window in tokens")
    parser.add_argument("--token-budget", type=int, default=6000, help="the Stagehands' token_budget=")


def open_model(args: argparse.Namespace, **options: Any) -> tuple[Path, LocalModel]:
    """The model add_model_options() names (``options`` go to LocalModel), announced with the load."""
    path = model_path(args.model)
    model = LocalModel(path, n_ctx=args.n_ctx, n_threads=args.threads, **options)
    print(f"model {path.name}; {load()}", flush=True)
    return path, model


async def stagehand_for(kind: str, browser: Browser, client: LLMClient, token_budget: int) -> Stagehand:
    """``wrapped``: a new page of the benchmark's own ``browser`` wrapped in ``Stagehand(page)``;
    ``launched``: the page ``Stagehand.launch()`` starts. The caller closes it."""
    if kind == "wrapped":
        return Stagehand(await browser.new_page(), model=client, token_budget=token_budget)
    return await Stagehand.launch(model=client, token_budget=token_budget)


def load() -> str:
    """The load average, printed with every figure: on shared cores the seconds depend on it."""
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return "load average unknown"
    return f"load average {one:.1f} (1 min) {five:.1f} (5 min) on {os.cpu_count()} CPUs"


def append_run(out: Path, run: dict[str, Any]) -> None:
    """Add ``run`` to the JSON list in ``out`` (earlier runs are kept)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    runs = json.loads(out.read_text()) if out.exists() else []
    out.write_text(json.dumps([*runs, run], indent=2))


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A Markdown table: the header, its separator, then a line per row of cells."""
    def line(cells: Sequence[object]) -> str:
        return "|" + "|".join(f" {text} " if (text := str(cell)) else " " for cell in cells) + "|"

    return "\n".join([line(header), "|" + "---|" * len(header), *(line(row) for row in rows)])


def finish(table: str, out: Path | None = None, run: dict[str, Any] | None = None) -> None:
    """Print the run's table and the load at the end; add ``run`` to ``out`` when given."""
    print()
    print(table)
    print(f"\n{load()} at the end")
    if out is not None and run is not None:
        append_run(out, run)
