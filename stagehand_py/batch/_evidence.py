"""The evidence folder of one sample: atomic writes, hashed screenshots, safe names."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from pathlib import Path
from typing import Any

from .._util import write_bytes_atomic as atomic_write_bytes
from .._util import write_json_atomic as atomic_write_json

__all__ = ["safe_component", "atomic_write_bytes", "atomic_write_json", "SampleEvidence", "sha256_file"]

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


def _inside(root: Path, path: Path) -> Path:
    resolved = path.resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise ValueError(f"refusing to write {path}: it is outside {root}")
    return resolved


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class SampleEvidence:
    """``<run>/<sample_id>/``: numbered screenshots (hashed as they are written) and JSON files."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.screenshots: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def add_screenshot(self, data: bytes, *, name: str = "screenshot", step: int | None = None) -> dict[str, Any]:
        """Save ``NNN_<name>.png`` and return its record (file, name, sha256, bytes, step).

        The hash is of the bytes handed to the write, so it is recorded at write time.
        """
        with self._lock:
            number = len(self.screenshots) + 1
            label = safe_component(name, limit=60, fallback="screenshot")
            filename = f"{number:03d}_{label}.png"
            path = _inside(self.folder, self.folder / filename)
            digest = hashlib.sha256(data).hexdigest()
            atomic_write_bytes(path, data)
            record = {"file": filename, "name": name, "sha256": digest, "bytes": len(data), "step": step}
            self.screenshots.append(record)
            return record

    def write_json(self, filename: str, data: Any) -> Path:
        path = _inside(self.folder, self.folder / safe_component(filename, fallback="file"))
        atomic_write_json(path, data)
        return path

    def read_json(self, filename: str) -> Any:
        path = self.folder / filename
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
