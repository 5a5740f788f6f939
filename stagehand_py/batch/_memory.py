"""Run-scoped memory for batch runs: what earlier samples of the same run learned.

A ``done`` sample's action log is distilled by one cheap model call into a few navigation
patterns; a failed or partial sample adds failure notes taken straight from its log (dead
URLs, broken selectors, unreachable pages), no model needed. Notes live in
``<run folder>/memory.json`` only -- never shared between runs -- are ranked by word overlap
with the next sample's goal, and handed to its agent for the first steps. ``--resume`` loads
the file and keeps extending it.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .._errors import StagehandError, TestDoubleError
from .._logging import logger
from .._prompts.batch import MEMORY_PATTERNS_DESCRIPTION, memory_distill_messages
from .._prompts.common import Fence
from ..llm import LLMClient, SystemMessage, UserMessage
from ._evidence import EvidenceStore
from ._spec import Sample, TaskSpec

__all__ = ["MemoryNote", "RunMemory", "failure_notes"]

MEMORY_FILE = "memory.json"

_STOP = frozenset(
    "the and for with from this that into onto each every than then them they their there what when "
    "where which while will would your you are was were has have had not but all any can its it's "
    "http https www html com org net page pages".split()
)
_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    out = set()
    for w in _WORD.findall(text.lower()):
        if len(w) < 3 or w in _STOP:
            continue
        out.add(w[:-1] if len(w) > 4 and w.endswith("s") else w)
    return out


@dataclass(frozen=True)
class MemoryNote:
    kind: Literal["pattern", "failure"]
    text: str
    sample_id: str
    created_at: str

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "text": self.text, "sample_id": self.sample_id, "created_at": self.created_at}


class _Patterns(BaseModel):
    model_config = ConfigDict(extra="forbid")

    patterns: list[str] = Field(max_length=3, description=MEMORY_PATTERNS_DESCRIPTION)


def _log_lines(log: Sequence[Mapping[str, Any]], *, limit: int = 40) -> str:
    lines = []
    for entry in list(log)[-limit:]:
        tool = entry.get("tool") or entry.get("action") or "?"
        args = json.dumps(entry.get("args", {}), sort_keys=True, default=str)[:120]
        ok = "ok" if entry.get("ok", True) else "FAILED"
        result = str(entry.get("result", ""))[:160]
        url = entry.get("url") or ""
        lines.append(f"step {entry.get('step', '?')}: {tool} {args} -> {ok}: {result} (at {url})".strip())
    return "\n".join(lines)


def failure_notes(sample: Sample, result: Mapping[str, Any], log: Sequence[Mapping[str, Any]], *, limit: int = 3) -> list[str]:
    """Notes from a failed or partial sample: dead URLs, broken selectors, unreachable pages."""
    notes: list[str] = []
    for entry in log:
        status = entry.get("http_status") or entry.get("status")
        url = (entry.get("args") or {}).get("url") or entry.get("url") or sample.url
        if entry.get("tool") in ("goto", None) and isinstance(status, int) and status >= 400:
            notes.append(f"Dead URL: {url} answered HTTP {status}.")
        elif entry.get("ok") is False:
            text = str(entry.get("result", ""))
            if re.search(r"ElementNotFound|not in the current outline|AmbiguousSelector|ActionFailed", text):
                args = json.dumps(entry.get("args", {}), sort_keys=True, default=str)[:100]
                notes.append(f"Broken selector at {entry.get('url') or url}: {entry.get('tool')} {args} failed ({text[:120]}).")
            elif entry.get("error_kind") == "infrastructure":
                notes.append(f"Unreachable at {entry.get('url') or url}: {text[:150]}.")
    error = str(result.get("error") or "")
    if not notes and re.search(r"HTTP [45]\d\d|net::ERR_|ERR_CONNECTION|NAME_NOT_RESOLVED", error):
        notes.append(f"Dead URL: {sample.url} ({error[:150]}).")
    return list(dict.fromkeys(notes))[:limit]


class RunMemory:
    """The notes of one run, in ``<run_dir>/memory.json``.

    ``client`` is the (cheap) model that distils done samples into patterns; without one only
    failure notes are kept. Safe to share between the concurrent samples of a run.
    """

    def __init__(self, run_dir: Path | str | EvidenceStore, *, client: LLMClient | None = None, limit: int = 5) -> None:
        self.store = EvidenceStore.of(run_dir)
        self.path = self.store.path_of(MEMORY_FILE)
        self.client = client
        self.limit = limit
        self.notes: list[MemoryNote] = []
        self._lock = asyncio.Lock()
        self.load()

    def load(self) -> None:
        """(Re)read the run's notes; a missing file is an empty memory, a broken one is reported."""
        data = self.store.read_bytes(MEMORY_FILE)
        if data is None:
            return
        try:
            raw = json.loads(data)
        except ValueError as exc:
            logger.warning("run memory: cannot read %s (%s); starting empty", self.path, exc)
            return
        self.notes = [
            MemoryNote(kind=n["kind"], text=n["text"], sample_id=n.get("sample_id", ""), created_at=n.get("created_at", ""))
            for n in raw.get("notes", []) if n.get("kind") in ("pattern", "failure") and n.get("text")
        ]

    def _save(self) -> None:
        self.store.write_json(MEMORY_FILE, {"version": 1, "notes": [n.as_dict() for n in self.notes]})

    def relevant(self, spec: TaskSpec, sample: Sample) -> list[str]:
        """The notes that share the most words with this sample's goal (task, keywords, sample
        data, URL), best first; ties go to the newest. Notes sharing no word are left out."""
        goal = _words(" ".join([spec.prompt, *spec.keywords, *sample.data.values(), sample.url]))
        scored = [(len(goal & _words(n.text)), i, n) for i, n in enumerate(self.notes)]
        ranked = sorted((t for t in scored if t[0] > 0), key=lambda t: (-t[0], -t[1]))
        return [f"{'Pattern' if n.kind == 'pattern' else 'Pitfall'}: {n.text}" for _, _, n in ranked[: self.limit]]

    async def learn(self, spec: TaskSpec, sample: Sample, result: Mapping[str, Any], log: Sequence[Mapping[str, Any]]) -> list[MemoryNote]:
        """Add what ``sample`` teaches: patterns when it is ``done`` (one model call), failure
        notes otherwise. Never raises for a model problem: the batch goes on without the note."""
        status = result.get("status")
        texts: list[str] = []
        kind: Literal["pattern", "failure"]
        if status == "done":
            kind = "pattern"
            if self.client is not None and log:
                texts = await self._distil(spec, sample, log)
        elif status in ("failed", "partial_success", "unverified"):
            kind = "failure"
            texts = failure_notes(sample, result, log)
        else:
            return []
        now = datetime.now(UTC).isoformat()
        async with self._lock:
            known = {n.text.casefold() for n in self.notes}
            added = [MemoryNote(kind, t.strip(), sample.id, now) for t in texts if t.strip() and t.strip().casefold() not in known]
            if added:
                self.notes.extend(added)
                await asyncio.to_thread(self._save)
        for note in added:
            logger.info("run memory: %s from %s: %s", note.kind, sample.id, note.text[:160])
        return added

    async def _distil(self, spec: TaskSpec, sample: Sample, log: Sequence[Mapping[str, Any]]) -> list[str]:
        assert self.client is not None
        fence = Fence()
        system, user = memory_distill_messages(spec.prompt, sample.url, _log_lines(log), fence)
        try:
            answer = await self.client.generate([SystemMessage(system), UserMessage(user)], purpose="batch_memory", output=_Patterns)
        except TestDoubleError:
            raise
        except StagehandError as exc:
            logger.warning("run memory: distilling %s failed (%s: %s); no pattern kept", sample.id, type(exc).__name__, exc)
            return []
        return [p[:300] for p in answer.output.patterns]
