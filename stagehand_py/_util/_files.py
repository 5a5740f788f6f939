"""Atomic writes: a reader sees the old file or the new one, never half of it."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["write_bytes_atomic", "write_json_atomic"]


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; the folder is created when missing.

    The bytes go to a temporary file in the same folder, are flushed and fsynced, then
    ``os.replace``-d over ``path`` (atomic on POSIX and Windows). A failed write leaves no
    temporary file behind.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> Path:
    """``data`` as indented UTF-8 JSON (values JSON cannot hold written as text), atomically."""
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"
    return write_bytes_atomic(path, text.encode("utf-8"))
