"""The history the model reads: older steps folded into one-line summaries, large binaries out of
events and history."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

__all__ = ["history_split", "sanitise", "summarise_steps"]


def history_split(n_steps: int, *, keep_last: int, summarise_every: int) -> int:
    """How many of the oldest steps are shown only as summary lines.

    The boundary moves in jumps of ``summarise_every`` so that the prompt prefix stays the
    same between jumps (friendlier to provider prompt caches); at least ``keep_last`` recent
    steps (and fewer than ``keep_last + summarise_every``) are always shown in full.
    """
    overflow = n_steps - keep_last
    if overflow <= 0:
        return 0
    return (overflow // summarise_every) * summarise_every


def summarise_steps(steps: Sequence[Mapping[str, Any]], *, width: int = 160) -> str:
    """One line per step: number, tool and short arguments, outcome."""
    lines = []
    for s in steps:
        args = json.dumps(s.get("args", {}), sort_keys=True, default=str)
        if len(args) > 80:
            args = args[:77] + "..."
        outcome = "ok" if s.get("ok") else "FAILED"
        line = f"step {s.get('step')}: {s.get('tool')} {args} -> {outcome}: {s.get('result', '')}"
        lines.append(line if len(line) <= width else line[: width - 3] + "...")
    return "\n".join(lines)


def sanitise(value: Any, *, max_str: int = 2000) -> Any:
    """A copy of ``value`` fit for events and history: bytes become a size-and-hash note, very
    long strings (e.g. base64 screenshots) are shortened."""
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        return f"<{len(data)} bytes sha256:{hashlib.sha256(data).hexdigest()[:16]}>"
    if isinstance(value, str):
        if len(value) > max_str:
            if _looks_base64(value):
                return f"<base64 {len(value)} chars sha256:{hashlib.sha256(value.encode()).hexdigest()[:16]}>"
            return value[:max_str] + f"... [{len(value) - max_str} more chars]"
        return value
    if isinstance(value, BaseModel):
        return sanitise(value.model_dump(mode="python"), max_str=max_str)
    if isinstance(value, Mapping):
        return {str(k): sanitise(v, max_str=max_str) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [sanitise(v, max_str=max_str) for v in value]
    return value


def _looks_base64(text: str) -> bool:
    sample = text[:400]
    if not re.fullmatch(r"[A-Za-z0-9+/=]+", sample):
        return False
    try:
        base64.b64decode(sample[: len(sample) // 4 * 4], validate=False)
    except ValueError:
        return False
    return True
