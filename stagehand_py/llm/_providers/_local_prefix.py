"""The fixed part of every prompt, computed once per machine: a llama.cpp slot cache on disk.

A CPU model pays ~20 ms per prompt token it has not seen, and a new process has seen none: the
first call of every run recomputed the same few hundred tokens of fixed instructions (the system
prompt every verb shares). llama.cpp can save a slot's key/value cache to a file and restore it
into a fresh engine in milliseconds, so the engine keeps that prefix on disk:

- **What is saved.** Only the chat template's rendering of a fixed system prompt, up to where the
  user's message begins: the warm-up request holds exactly those tokens, never a page or a
  value, and the file is kept only when llama.cpp saved exactly that many tokens (a slot that
  also held anything else would save more). The text is the caller's, who must pass fixed
  instructions only (the Stagehand passes the one system prompt of its verbs).
- **Where.** A folder beside the model file (``<model>.prompt-cache/``), written atomically
  (llama.cpp writes a temporary name, which is then renamed); the newest few files are kept.
  A folder that cannot be written turns the saved cache off, nothing else.
- **Checked before llama.cpp reads it.** Beside each file, ``prefix-<key>.json`` records its
  SHA-256 and the tokens it holds (their hash). A file that is not the one recorded, or was saved
  for other tokens, or does not start like a llama.cpp sequence state, is never restored: it is
  logged as ignored, computed again and overwritten. This check is what stands between a bad file
  and the process: llama.cpp aborts the whole process on a truncated state (``GGML_ASSERT(nread <=
  state_size)``, seen with xllamacpp 2026.10.11549), and restores a corrupt one as if it were good.
  So a truncated, corrupt or foreign file costs one computation, never a crash or a cache of other text.
- **Its key.** The model file (its size and a hash of its first and last MiB), the rendered
  prefix's SHA-256 (so a changed prompt is a new file), the context and batch sizes and the
  engine's version (the file format is llama.cpp's).
- **When.** Right after the model loads, before any request: restored when the file is there,
  otherwise computed in pieces of :data:`PIECE_TOKENS` (so a process that exits meanwhile
  waits seconds, not the whole prefix) and saved.

Everything goes through the engine's loopback HTTP side (its ``/slots``, ``/tokenize`` and
``/apply-template`` routes: xllamacpp has no in-process call for them), with its private key.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = ["PIECE_TOKENS", "Prefix", "PrefixOutcome", "cache_folder", "prepare_prefix"]

logger = logging.getLogger("stagehand_py")

#: Tokens computed per warm-up request: a process exiting meanwhile waits for at most one piece.
PIECE_TOKENS = 256
#: Cache files kept per model folder (other prompt versions and settings), newest first.
_KEEP_FILES = 4
_SENTINEL = "\u2063stagehand-user-message\u2063"
_FORMAT = 1  # bump when what goes into the key changes
#: llama.cpp's sequence-state file starts with this magic ('ggsq'); what follows (its version, the
#: tokens, the state) is llama.cpp's to check, and the key holds the engine's version.
_SEQ_MAGIC = 0x67677371

PrefixOutcome = Literal["restored", "saved", "computed", "off"]


@dataclass(frozen=True)
class Prefix:
    """What became of a fixed prompt: ``restored`` from its file, ``saved`` (computed now and
    written for the next process), ``computed`` (not written: no folder, or a stop), ``off``."""

    outcome: PrefixOutcome
    tokens: int = 0
    seconds: float = 0.0


def cache_folder(model: Path) -> Path:
    """Where ``model``'s saved prefixes live: a folder beside it."""
    return model.with_name(model.name + ".prompt-cache")


def _file_identity(model: Path) -> str:
    size = model.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with model.open("rb") as f:
        digest.update(f.read(1 << 20))
        f.seek(max(0, size - (1 << 20)))
        digest.update(f.read(1 << 20))
    return digest.hexdigest()


class _Http:
    """The engine's loopback HTTP side, with its private key."""

    def __init__(self, address: str, api_key: str) -> None:
        self.address, self.api_key = address, api_key

    def post(self, path: str, body: dict[str, Any], timeout: float = 120.0) -> dict[str, Any]:
        request = urllib.request.Request(self.address + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json",
                                                  "Authorization": f"Bearer {self.api_key}"})
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # loopback only: the engine's own port
            result: dict[str, Any] = json.loads(answer.read())
            return result


def prepare_prefix(server: Any, api_key: str, *, model: Path, folder: Path, system: str, settings: dict[str, Any],
                   stop: threading.Event, on_compute: Callable[[], None] = lambda: None) -> Prefix:
    """Make ``system``'s prefix ready in the engine's slot: restore it from ``folder`` (the
    engine's ``slot_save_path``) or compute it (``on_compute`` is called first) and save it there. Call with the
    engine's lock held: the slot must not serve a request meanwhile. A saved file that fails its
    checks is logged and replaced; any other failure is logged and turns the saved cache off for
    this load. Neither fails the model."""
    started = time.perf_counter()
    http = _Http(server.listening_address, api_key)
    try:
        rendered = http.post("/apply-template", {"messages": [{"role": "system", "content": system},
                                                              {"role": "user", "content": _SENTINEL}]})["prompt"]
        if _SENTINEL not in rendered:
            return Prefix("off")
        prefix = rendered[: rendered.index(_SENTINEL)]
        ids = http.post("/tokenize", {"content": prefix, "add_special": True, "parse_special": True})["tokens"]
        key = hashlib.sha256(json.dumps({"format": _FORMAT, "model": _file_identity(model), "prefix":
                                         hashlib.sha256(prefix.encode()).hexdigest(), **settings},
                                        sort_keys=True).encode()).hexdigest()[:24]
        name = f"prefix-{key}.bin"
        if (folder / name).is_file():
            problem = _unusable(folder / name, ids)
            if problem is None:
                problem = _restore(http, name, len(ids))
            if problem is None:
                return Prefix("restored", len(ids), time.perf_counter() - started)
            logger.warning("ignoring the saved prompt cache %s (%s): computing it again", folder / name, problem)
        on_compute()
        for end in range(min(PIECE_TOKENS, len(ids)), len(ids) + PIECE_TOKENS, PIECE_TOKENS):
            if stop.is_set():
                return Prefix("computed", 0, time.perf_counter() - started)
            _complete(server, ids[: min(end, len(ids))])
        saved = _save(http, folder, name, ids=ids)
        return Prefix("saved" if saved else "computed", len(ids), time.perf_counter() - started)
    except (OSError, urllib.error.URLError, KeyError, ValueError, RuntimeError) as exc:
        logger.warning("the fixed prompt's saved cache is off for this load (%s: %s)", type(exc).__name__, exc)
        return Prefix("off", 0, time.perf_counter() - started)


def _meta(file: Path) -> Path:
    return file.with_suffix(".json")


def _sha256(file: Path) -> str:
    digest = hashlib.sha256()
    with file.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _ids_digest(ids: list[int]) -> str:
    return hashlib.sha256(json.dumps(ids).encode()).hexdigest()


def _unusable(file: Path, ids: list[int]) -> str | None:
    """Why ``file`` must not be restored for a prefix of ``ids`` (None: it may be)."""
    try:
        record = json.loads(_meta(file).read_text(encoding="utf-8"))
        recorded, for_ids = record["sha256"], record["ids"]
    except (OSError, ValueError, TypeError, KeyError) as exc:
        return f"its record {_meta(file).name} is missing or unreadable: {type(exc).__name__}"
    if for_ids != _ids_digest(ids):
        return f"it was saved for other tokens than this prompt's {len(ids)}"
    if recorded != _sha256(file):
        return "its content differs from the SHA-256 recorded when it was saved (corrupt or replaced)"
    with file.open("rb") as f:
        head = f.read(4)
    if len(head) < 4 or int.from_bytes(head, "little") != _SEQ_MAGIC:
        return f"it is not a llama.cpp sequence state (it starts with {head!r})"
    return None


def _restore(http: _Http, name: str, expected: int) -> str | None:
    """Restore the slot from ``name``; why it failed (llama.cpp refused it), or None."""
    try:
        restored = http.post("/slots/0?action=restore", {"filename": name})
    except urllib.error.HTTPError as exc:  # llama.cpp checks the state's sizes and refuses a mismatch
        http.post("/slots/0?action=erase", {})  # whatever the failed restore left is dropped
        return f"llama.cpp refused it: HTTP {exc.code}"
    if int(restored.get("n_restored", -1)) != expected:
        http.post("/slots/0?action=erase", {})
        return f"llama.cpp restored {restored.get('n_restored')} tokens, not {expected}"
    return None


def _complete(server: Any, ids: list[int]) -> None:
    """Have the slot hold exactly ``ids`` (llama.cpp reuses what it has and computes the rest)."""
    errors: list[str] = []

    def on_chunk(raw: Any) -> bool:
        data = json.loads(raw) if isinstance(raw, str) else raw
        if isinstance(data, dict) and data.get("error"):
            errors.append(str(data["error"]))
        return False

    result = server.handle_completions(json.dumps({"prompt": ids, "n_predict": 0, "cache_prompt": True}), on_chunk)
    if isinstance(result, dict) and result.get("error"):
        errors.append(str(result["error"]))
    if errors:
        raise RuntimeError(f"the warm-up request failed: {errors[0]}")


def _save(http: _Http, folder: Path, name: str, *, ids: list[int]) -> bool:
    """Write the slot to ``folder/name`` through a temporary name; kept only when llama.cpp saved
    exactly the prefix's tokens (``ids`` and nothing after them), with its record (its SHA-256 and
    the tokens it holds) beside it."""
    expected = len(ids)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        logger.info("not saving the fixed prompt's cache: cannot make %s (%s)", folder, exc)
        return False
    temporary = folder / f"tmp-{os.getpid()}-{secrets.token_hex(4)}.bin"
    record = temporary.with_suffix(".json")
    try:
        saved = http.post("/slots/0?action=save", {"filename": temporary.name})
        if int(saved.get("n_saved", -1)) != expected:
            logger.warning("not keeping the prompt cache: the slot held %s tokens, not the %d of the fixed prompt",
                           saved.get("n_saved"), expected)
            return False
        record.write_text(json.dumps({"sha256": _sha256(temporary), "ids": _ids_digest(ids),
                                           "tokens": expected}), encoding="utf-8")
        os.replace(temporary, folder / name)  # until its record follows, the file fails its check: not used
        os.replace(record, _meta(folder / name))
    finally:
        temporary.unlink(missing_ok=True)
        record.unlink(missing_ok=True)
    for old in sorted(folder.glob("prefix-*.bin"), key=lambda p: p.stat().st_mtime, reverse=True)[_KEEP_FILES:]:
        old.unlink(missing_ok=True)
        _meta(old).unlink(missing_ok=True)
    logger.info("saved the fixed prompt's cache (%d tokens) to %s", expected, folder / name)
    return True
