"""What the embedded-model benchmarks share: the model file, the load average line, the JSON log."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from stagehand_py.llm._providers._local import models_dir

DEFAULT_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


def model_path(given: str | None) -> Path:
    """``--model``'s path, else the pinned model in the models folder."""
    return Path(given) if given else (models_dir() or Path(".")) / DEFAULT_MODEL


def load() -> str:
    """The load average, printed with every figure: on shared cores the seconds depend on it."""
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min) {five:.1f} (5 min) on {os.cpu_count()} CPUs"


def append_run(out: Path, run: dict[str, Any]) -> None:
    """Add ``run`` to the JSON list in ``out`` (earlier runs are kept)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    runs = json.loads(out.read_text()) if out.exists() else []
    out.write_text(json.dumps([*runs, run], indent=2))
