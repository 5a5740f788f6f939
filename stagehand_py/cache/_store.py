"""The action cache: act(instruction) and observe(instruction) results on disk, replayed with no model.

One JSON file per key, named ``<kind>-<instruction slug>-<hash>.json`` so a person can find,
read and delete an entry. The key is the kind (act/observe), the instruction, the normalised
URL, the *names* of the variables (never their values) and the selector scope. Entries hold
Actions whose arguments keep their ``%placeholders%``, so no value is ever written.
Writes are atomic (temporary file in the same folder, then ``os.replace``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import ValidationError

from .._errors import CacheError
from .._types import Action

__all__ = ["ActionCache", "CacheKey", "normalize_url"]

logger = logging.getLogger("stagehand_py.cache")

FORMAT = "stagehand_py.action_cache/1"
_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_url(url: str) -> str:
    """``url`` without fragment, default port or case differences in scheme/host; query sorted."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    port = parts.port
    netloc = host if port is None or _DEFAULT_PORTS.get(scheme) == port else f"{host}:{port}"
    query = urlencode(sorted(parse_qsl(parts.query, keep_blank_values=True)))
    return urlunsplit((scheme, netloc, parts.path or "/", query, ""))


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


class ActionCache:
    """A folder of cache entries; see the module docstring."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def __repr__(self) -> str:
        return f"ActionCache({str(self.directory)!r})"

    def key(self, kind: Literal["act", "observe"], instruction: str, url: str, variables: Iterable[str],
            selector: str | None = None) -> CacheKey:
        return CacheKey(kind, instruction.strip(), normalize_url(url), tuple(sorted(variables)), selector)

    def path(self, key: CacheKey) -> Path:
        return self.directory / key.filename

    def load(self, key: CacheKey) -> list[Action] | None:
        """The cached actions for ``key``, or None. An unreadable entry is a miss (logged), not an error."""
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
        except (AttributeError, KeyError, TypeError, ValidationError) as exc:
            logger.warning("cache entry %s is malformed (%s); ignoring it", path.name, type(exc).__name__)
            return None
        logger.debug("cache hit: %s", path.name)
        return actions

    def store(self, key: CacheKey, actions: Iterable[Action]) -> Path:
        """Write (or rewrite) the entry for ``key`` atomically; returns its path."""
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
        }
        path = self.path(key)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=self.directory)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump(entry, handle, indent=2, ensure_ascii=False)
                    handle.write("\n")
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise CacheError(f"cannot write cache entry {path}: {exc}. Check that cache_dir is writable.") from exc
        logger.debug("cache entry written: %s", path.name)
        return path
