"""Where evidence goes: a run folder on disk or at any fsspec URL, written atomically, with safe
names; and one sample's evidence, gathered in memory while the sample runs.

A sample's files are written by the process that schedules the run (the driver), after the
sample's work returns: whichever engine ran it and however often a dead worker made it start
over, each sample's files are written once, from one place (see :func:`record_row`).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from pathlib import Path
from typing import Any

from .._errors import ConfigurationError
from .._util import write_bytes_atomic as atomic_write_bytes
from .._util import write_json_atomic as atomic_write_json

__all__ = [
    "safe_component",
    "safe_filename",
    "atomic_write_bytes",
    "atomic_write_json",
    "EvidenceStore",
    "SampleEvidence",
    "sha256_file",
]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))}


def safe_component(text: str, *, limit: int = 100, fallback: str = "item") -> str:
    """One path component made from untrusted text (a page title, a sample id, a URL).

    Only ``A-Z a-z 0-9 . _ -`` survive (runs of anything else become ``_``); no leading dots or
    dashes, so never ``..``, a hidden file or an option-like name; no separators at all, so the
    result cannot leave the folder it is joined to.
    """
    cleaned = _UNSAFE.sub("_", text).strip("._-")[:limit].strip("._-")
    if not cleaned or cleaned.lower().split(".")[0] in _WINDOWS_RESERVED:
        cleaned = f"{fallback}_{cleaned}" if cleaned else fallback
    return cleaned


def safe_filename(text: str, *, limit: int = 120, fallback: str = "file") -> str:
    """A file name made from untrusted text, as :func:`safe_component`, at most ``limit`` characters,
    keeping its extension when it is shortened (a 300-character ``....pdf`` stays a ``.pdf``)."""
    stem, dot, suffix = text.rpartition(".")
    suffix = _UNSAFE.sub("_", suffix).strip("._-")
    if not dot or not stem.strip() or not suffix or len(suffix) > 16:
        return safe_component(text, limit=limit, fallback=fallback)
    return f"{safe_component(stem, limit=limit - len(suffix) - 1, fallback=fallback)}.{suffix}"


#: The files the run writes into every row's folder itself: no kept file may take their names.
_RESERVED_FILES = frozenset({"result.json", "action_log.json", "checkpoint.json", "run.html", "trace.zip"})


def _inside(root: Path, path: Path) -> Path:
    resolved = path.resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise ValueError(f"refusing to write {path}: it is outside {root}")
    return resolved


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _json_bytes(data: Any) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n").encode("utf-8")


def _is_url(location: str) -> bool:
    return re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", location) is not None


class EvidenceStore:
    """A run folder: a local path, or any fsspec URL (``s3://bucket/evidence/run_1``, ``memory://...``).

    Paths inside it are ``/``-separated names made by :func:`safe_component`, so nothing written
    here can leave it. Local writes go to a temporary file renamed into place; a URL's file is one
    ``pipe_file`` call, which object stores (and fsspec's memory filesystem) apply whole: a reader
    sees the old object or the new one, never half of it.
    """

    def __init__(self, location: str | Path) -> None:
        text = str(location)
        self._fs: Any = None
        if isinstance(location, Path) or not _is_url(text) or text.startswith("file://"):
            self.local: Path | None = Path(text.removeprefix("file://"))
            self.location = str(self.local)
            return
        try:
            import fsspec
        except ImportError as exc:
            raise ConfigurationError(
                f"evidence at {text!r} needs fsspec: pip install 'stagehand_py[ray]' (or pip install fsspec)"
            ) from exc
        try:
            self._fs, self._root = fsspec.core.url_to_fs(text)
        except (ImportError, ValueError) as exc:  # an unknown protocol, or its driver is not installed
            raise ConfigurationError(f"cannot open the evidence location {text!r}: {exc}") from exc
        self.local = None
        self.location = text.rstrip("/")

    def __repr__(self) -> str:
        return f"EvidenceStore({self.location!r})"

    def __str__(self) -> str:
        return self.location

    @property
    def name(self) -> str:
        return self.location.rstrip("/").rsplit("/", 1)[-1]

    def child(self, name: str) -> EvidenceStore:
        """The store of a folder inside this one (``name`` as given: callers make it safe)."""
        return EvidenceStore(self.local / name if self.local is not None else f"{self.location}/{name}")

    @classmethod
    def of(cls, location: Path | str | EvidenceStore) -> EvidenceStore:
        return location if isinstance(location, EvidenceStore) else cls(location)

    def path_of(self, relative: str) -> Path | str:
        """Where ``relative`` lives: a ``Path`` on this machine, else its URL."""
        return self.local / relative if self.local is not None else f"{self.location}/{relative}"

    def _full(self, relative: str) -> str:
        parts = relative.split("/")
        if any(part in ("", ".", "..") for part in parts):
            raise ValueError(f"refusing to write {relative!r}: not a plain relative path")
        return f"{self._root.rstrip('/')}/{relative}"

    def write_bytes(self, relative: str, data: bytes) -> None:
        if self.local is not None:
            atomic_write_bytes(_inside(self.local, self.local / relative), data)
        else:
            self._fs.pipe_file(self._full(relative), data)

    def write_json(self, relative: str, data: Any) -> None:
        self.write_bytes(relative, _json_bytes(data))

    def read_bytes(self, relative: str) -> bytes | None:
        try:
            if self.local is not None:
                return (self.local / relative).read_bytes()
            data: bytes = self._fs.cat_file(self._full(relative))
            return data
        except (OSError, ValueError):  # fsspec raises FileNotFoundError (an OSError) for a missing file
            return None

    def read_json(self, relative: str) -> Any:
        raw = self.read_bytes(relative)
        try:
            return json.loads(raw) if raw is not None else None
        except ValueError:
            return None

    def exists(self) -> bool:
        if self.local is not None:
            return self.local.exists()
        return bool(self._fs.exists(self._root))

    def runs(self) -> list[str]:
        """The names of the run folders (``run_*`` holding a ``run.json``) inside this one, sorted."""
        if self.local is not None:
            return sorted(p.name for p in self.local.glob("run_*") if (p / "run.json").is_file())
        try:
            entries = self._fs.ls(self._root, detail=False)
        except FileNotFoundError:
            return []
        names = [str(e).rstrip("/").rsplit("/", 1)[-1] for e in entries]
        return sorted(n for n in names if n.startswith("run_") and self._fs.exists(self._full(f"{n}/run.json")))


class SampleEvidence:
    """One sample's evidence while it runs: numbered screenshots (hashed as they are taken) and
    named files, kept in memory until the run records the sample (:meth:`write_to`).

    Nothing touches the store while the sample's work runs, so a worker that dies mid-sample
    leaves no half-written folder behind, and a sample that runs again starts clean.
    """

    def __init__(self, folder: str = "sample") -> None:
        self.folder = safe_component(folder, fallback="sample")
        self.screenshots: list[dict[str, Any]] = []
        self.files: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def add_screenshot(self, data: bytes, *, name: str = "screenshot", step: int | None = None) -> dict[str, Any]:
        """Keep ``NNN_<name>.png`` and return its record (file, name, sha256, bytes, step).

        The hash is of these very bytes: what is written later is what was hashed now.
        """
        with self._lock:
            number = len(self.screenshots) + 1
            label = safe_component(name, limit=60, fallback="screenshot")
            filename = self._free_name(f"{number:03d}_{label}.png")
            record = {"file": filename, "name": name, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data), "step": step}
            self.files[filename] = bytes(data)
            self.screenshots.append(record)
            return record

    def add_json(self, filename: str, data: Any) -> str:
        return self.add_file(filename, _json_bytes(data))

    def add_file(self, filename: str, data: bytes, *, folder: str = "") -> str:
        """Keep ``data`` as ``filename`` (made safe, shortened keeping its extension, inside the
        row's subfolder ``folder`` if given) under a name no other file of the row has: a taken
        name gets ``_2``, ``_3``... before its extension. Returns the name it got (``folder/name``)."""
        prefix = f"{safe_component(folder, fallback='files')}/" if folder else ""
        with self._lock:
            name = self._free_name(prefix + safe_filename(filename))
            self.files[name] = bytes(data)
        return name

    def keep(self, name: str, data: bytes) -> None:
        """Keep one of the run's own files of the row (``run.html``, ``trace.zip``: reserved names
        no other file of the row takes)."""
        if name not in _RESERVED_FILES:
            raise ValueError(f"{name!r} is not one of the run's own files")
        with self._lock:
            self.files[name] = bytes(data)

    def _free_name(self, name: str) -> str:
        """``name``, or ``<stem>_2.<ext>``, ``_3``... if a file of the row (or the run's own) has it."""
        stem, dot, suffix = name.rpartition(".") if "." in name.rsplit("/", 1)[-1] else (name, "", "")
        taken, n = name, 2
        while taken in self.files or taken in _RESERVED_FILES:
            taken, n = f"{stem}_{n}{dot}{suffix}", n + 1
        return taken

    def write_to(self, store: EvidenceStore) -> None:
        """Write every file into ``store/<folder>/``."""
        with self._lock:
            files = dict(self.files)
        for name, data in files.items():
            store.write_bytes(f"{self.folder}/{name}", data)
