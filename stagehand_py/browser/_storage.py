"""Writing a storage state file: it holds session cookies, so only its owner may read it."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["write_storage_state"]


def write_storage_state(path: str | os.PathLike[str], state: Mapping[str, Any]) -> Path:
    """Write ``state`` as JSON to ``path`` (mode 0600), replacing it atomically."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    descriptor = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump(state, handle, indent=2)
    os.replace(scratch, target)
    return target
