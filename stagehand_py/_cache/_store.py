"""The action cache: act(instruction) and observe(instruction) results on disk, replayed with no model.

One JSON file per key, named ``<kind>-<instruction slug>-<hash>.json`` so a person can find,
read and delete an entry. The key is the kind (act/observe), the instruction, the normalised
URL, the *names* of the variables (never their values) and the selector scope. Entries hold
Actions whose arguments keep their ``%placeholders%``, so no value is ever written, and, in
``elements`` (one per action, same order), the identity of the element each action was
planned on: its outline role and accessible name (``{"role": "textbox", "name": "Username"}``,
names redacted like prompts; never an input value), or null when unknown. A replay compares
it with the element the cached XPath names now (see :mod:`stagehand_py._operations._heal`).
Entries written before identities existed have no ``elements`` and load with none.
Writes are atomic (temporary file in the same folder, then ``os.replace``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from .._errors import CacheError
from .._types import Action, ElementIdentity
from .._util import normalise_url, write_json_atomic

__all__ = ["ActionCache", "CacheEntry", "CacheKey", "ElementIdentity"]

logger = logging.getLogger("stagehand_py._cache")

FORMAT = "stagehand_py.action_cache/1"


@dataclass(frozen=True)
class CacheKey:
    kind: Literal["act", "observe"]
    instruction: str
    url: str
    variables: tuple[str, ...]
    selector: str | None = None

    @property
    def digest(self) -> str:
        body = json.dumps([self.kind, self.instruction, self.url, list(self.variables), self.selector], ensure_ascii=False)
        return hashlib.sha256(body.encode()).hexdigest()

    @property
    def filename(self) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", self.instruction.lower()).strip("-")[:48].strip("-") or "entry"
        return f"{self.kind}-{slug}-{self.digest[:16]}.json"


@dataclass(frozen=True)
class CacheEntry:
    """A loaded entry: the actions, and per action the element identity (None when unknown)."""

    actions: list[Action]
    elements: list[ElementIdentity | None]


def _identity(raw: object) -> ElementIdentity | None:
    if isinstance(raw, dict) and isinstance(raw.get("role"), str) and isinstance(raw.get("name"), str):
        return ElementIdentity(raw["role"], raw["name"])
    return None


class ActionCache:
    """A folder of cache entries; see the module docstring."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def __repr__(self) -> str:
        return f"ActionCache({str(self.directory)!r})"

    def key(self, kind: Literal["act", "observe"], instruction: str, url: str, variables: Iterable[str],
            selector: str | None = None) -> CacheKey:
        return CacheKey(kind, instruction.strip(), normalise_url(url), tuple(sorted(variables)), selector)

    def path(self, key: CacheKey) -> Path:
        return self.directory / key.filename

    def load(self, key: CacheKey) -> list[Action] | None:
        """The cached actions for ``key``, or None. An unreadable entry is a miss (logged), not an error."""
        entry = self.load_entry(key)
        return entry.actions if entry is not None else None

    def load_entry(self, key: CacheKey) -> CacheEntry | None:
        """:meth:`load` with the element identities (None per action when the entry has none)."""
        path = self.path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            logger.warning("cache entry %s is unreadable (%s); ignoring it", path.name, exc)
            return None
        try:
            if data.get("format") != FORMAT or data.get("digest") != key.digest:
                logger.warning("cache entry %s does not match this key or format; ignoring it", path.name)
                return None
            actions = [Action.model_validate(a) for a in data["actions"]]
            raw_elements = data.get("elements") or []
            if not isinstance(raw_elements, list):
                raise TypeError("elements is not a list")
        except (AttributeError, KeyError, TypeError, ValidationError) as exc:
            logger.warning("cache entry %s is malformed (%s); ignoring it", path.name, type(exc).__name__)
            return None
        elements = [_identity(raw_elements[n]) if n < len(raw_elements) else None for n in range(len(actions))]
        logger.debug("cache hit: %s", path.name)
        return CacheEntry(actions, elements)

    def store(self, key: CacheKey, actions: Iterable[Action],
              elements: Iterable[ElementIdentity | None] | None = None) -> Path:
        """Write (or rewrite) the entry for ``key`` atomically; returns its path.

        ``elements``: per action, the identity of the element it was planned on (see the module
        docstring); the caller passes role and name only, already redacted.
        """
        actions = list(actions)
        identities = list(elements) if elements is not None else []
        identities += [None] * (len(actions) - len(identities))
        entry = {
            "format": FORMAT,
            "kind": key.kind,
            "instruction": key.instruction,
            "url": key.url,
            "variables": list(key.variables),
            "selector": key.selector,
            "digest": key.digest,
            "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "actions": [a.model_dump(mode="json") for a in actions],
            "elements": [{"role": e.role, "name": e.name} if e is not None else None for e in identities[: len(actions)]],
        }
        path = self.path(key)
        try:
            write_json_atomic(path, entry)
        except OSError as exc:
            raise CacheError(f"cannot write cache entry {path}: {exc}. Check that cache_dir is writable.") from exc
        logger.debug("cache entry written: %s", path.name)
        return path
