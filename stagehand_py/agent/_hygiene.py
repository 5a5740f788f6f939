"""The agent's hygiene for long tasks, as plain objects with no I/O but the checkpoint write.

Each piece is small and testable on its own; the loop (:mod:`._loop`) wires them together:

- :class:`StepBudget`: one-time warnings at 75% and 90% of the steps, "last step" flag,
  wall-clock deadline;
- :class:`StallDetector`: page signatures and repeated identical actions, escalating nudges
  at 3, 5 and 8 stalled steps, then a forced finish;
- :class:`FailureTracker`: consecutive failures (show the actionable elements after 3) and a
  circuit breaker on consecutive *infrastructure* failures (:func:`classify_error`);
- :func:`deep_merge` for ``save_progress`` (arrays append, objects recurse);
- :func:`write_json_atomic` for checkpoints (temp file in the same folder + ``os.replace``);
- :func:`check_done_output`: a ``done`` output against the caller's schema;
- :func:`summarise_steps` / :func:`history_split`: older steps folded into one-line summaries;
- :func:`sanitise`: large binaries out of events and history;
- long-horizon extras: :func:`item_count` (``expected_items``), :func:`is_pagination_control`
  (the pagination budget), :func:`count_actionable` / :func:`batch_abort_reason`
  (multi-action steps).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import jsonschema
from pydantic import BaseModel, ValidationError

from .._errors import (
    BrowserError,
    CDPError,
    PageClosedError,
    ProviderConnectionError,
    RateLimitError,
    ServerError,
    StagehandTimeoutError,
)
from ..snapshot import parse_line, parse_outline

__all__ = [
    "NUDGE_LEVELS",
    "ErrorKind",
    "FailureTracker",
    "StallDetector",
    "StallState",
    "StepBudget",
    "action_signature",
    "batch_abort_reason",
    "check_done_output",
    "classify_error",
    "count_actionable",
    "deep_merge",
    "history_split",
    "is_pagination_control",
    "item_count",
    "normalise_url",
    "page_signature",
    "sanitise",
    "summarise_steps",
    "write_json_atomic",
]

# --- budget --------------------------------------------------------------------------------


@dataclass
class StepBudget:
    """Steps and wall time. ``warnings(step)`` yields each threshold once.

    ``step`` counts from 1. With ``max_steps=20`` the 75% warning comes at step 15 and the 90%
    warning at step 18; step 20 is the last (only done/fail are offered there).
    """

    max_steps: int
    deadline: float | None = None  # a time.monotonic() value
    thresholds: tuple[float, ...] = (0.75, 0.9)
    _given: set[float] = field(default_factory=set)

    def warnings(self, step: int) -> list[float]:
        """Thresholds crossed at ``step`` that were not announced before (each at most once)."""
        out: list[float] = []
        for t in self.thresholds:
            if t not in self._given and step >= max(1, int(self.max_steps * t + 0.5)) and step < self.max_steps:
                self._given.add(t)
                out.append(t)
        return out

    def is_last(self, step: int) -> bool:
        return step >= self.max_steps

    def remaining(self, step: int) -> int:
        return max(0, self.max_steps - step)

    def out_of_time(self, now: float) -> bool:
        return self.deadline is not None and now >= self.deadline


# --- stall detection -----------------------------------------------------------------------

#: Stalled-step counts at which the model is nudged; after the last one it must finish.
NUDGE_LEVELS: tuple[int, ...] = (3, 5, 8)

_TRACKING = re.compile(r"^(utm_|fbclid$|gclid$|mc_eid$|_ga$)")


def normalise_url(url: str) -> str:
    """Scheme and host lower-cased, default port, fragment and tracking parameters dropped,
    query sorted, trailing slash of the path removed: two URLs for the same page compare equal."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    host = (parts.hostname or "").lower()
    port = parts.port
    if port is not None and not ((parts.scheme == "http" and port == 80) or (parts.scheme == "https" and port == 443)):
        host = f"{host}:{port}"
    query = urlencode(sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _TRACKING.match(k)))
    path = parts.path.rstrip("/") or "/"
    return urlunsplit((parts.scheme.lower(), host, path, query, ""))


def page_signature(url: str, outline: str) -> str:
    """A short hash of the normalised URL and the outline text."""
    h = hashlib.sha256(normalise_url(url).encode())
    h.update(b"\0")
    h.update(hashlib.sha256(outline.encode()).digest())
    return h.hexdigest()[:16]


def action_signature(tool: str, args: Mapping[str, Any]) -> str:
    """The tool and its arguments, canonically: identical calls give identical signatures."""
    return tool + ":" + json.dumps(args, sort_keys=True, default=str, separators=(",", ":"))


@dataclass(frozen=True)
class StallState:
    """What the stall detector says after a step."""

    stalled_steps: int
    #: The nudge level reached at this step (1, 2 or 3), announced once; ``None`` otherwise.
    nudge: int | None
    #: True once the last level was reached: only done/fail are offered from now on.
    force_finish: bool


class StallDetector:
    """Counts consecutive steps that changed nothing.

    A step is *stalled* when the page signature after it equals the one before it, or when it
    repeats the previous step's action exactly. A step that changes the page and is not a
    repetition resets the count (and re-arms the nudges). ``levels`` are the counts at which
    the nudges fire; reaching the last one sets ``force_finish`` for good.
    """

    def __init__(self, levels: Sequence[int] = NUDGE_LEVELS) -> None:
        if list(levels) != sorted(set(levels)) or not levels or levels[0] < 1:
            raise ValueError(f"levels must be increasing positive step counts, got {levels!r}")
        self.levels = tuple(levels)
        self._count = 0
        self._announced = 0
        self._force = False
        self._last_action: str | None = None

    @property
    def stalled_steps(self) -> int:
        return self._count

    @property
    def force_finish(self) -> bool:
        return self._force

    def record(self, *, before: str, after: str, action: str) -> StallState:
        repeated = action == self._last_action
        self._last_action = action
        if before == after or repeated:
            self._count += 1
        else:
            self._count = 0
            self._announced = 0
        nudge: int | None = None
        for level, threshold in enumerate(self.levels, start=1):
            if self._count >= threshold and self._announced < level:
                self._announced = level
                nudge = level
        if self._announced >= len(self.levels):
            self._force = True
        return StallState(self._count, nudge, self._force)


# --- failures ------------------------------------------------------------------------------

ErrorKind = Literal["infrastructure", "logic"]

_INFRA_PATTERNS = re.compile(
    r"net::ERR_(NAME_NOT_RESOLVED|CONNECTION_(REFUSED|RESET|CLOSED|TIMED_OUT|ABORTED|FAILED)|"
    r"INTERNET_DISCONNECTED|ADDRESS_UNREACHABLE|NETWORK_CHANGED|TIMED_OUT|EMPTY_RESPONSE|"
    r"PROXY_CONNECTION_FAILED|SSL_PROTOCOL_ERROR|TUNNEL_CONNECTION_FAILED)"
    r"|Target crashed|Page crashed|Target page, context or browser has been closed|Browser has been closed"
    r"|Connection closed|WebSocket is not open|ECONNREFUSED|getaddrinfo",
    re.IGNORECASE,
)


def classify_error(exc: BaseException) -> ErrorKind:
    """``"infrastructure"`` for the browser, the network or the model service failing (DNS,
    connection refused, a crashed or closed page, a provider that cannot be reached);
    ``"logic"`` for everything the model can fix by choosing differently (element not found,
    invalid arguments, a blocked domain, a bad answer)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (PageClosedError, CDPError, ProviderConnectionError, ServerError, RateLimitError)):
            return "infrastructure"
        if isinstance(current, BrowserError) and not isinstance(current, StagehandTimeoutError):
            return "infrastructure"
        if _INFRA_PATTERNS.search(str(current)):
            return "infrastructure"
        current = current.__cause__ or current.__context__
    return "logic"


@dataclass(frozen=True)
class FailureState:
    consecutive: int
    consecutive_infrastructure: int
    #: True from the 3rd consecutive failure: show the model the actionable elements.
    show_elements: bool
    #: True when the circuit breaker tripped: stop the run.
    tripped: bool


class FailureTracker:
    """Consecutive failures, and a circuit breaker on consecutive infrastructure failures."""

    def __init__(self, *, show_elements_after: int = 3, breaker_threshold: int = 3) -> None:
        self.show_elements_after = show_elements_after
        self.breaker_threshold = breaker_threshold
        self.consecutive = 0
        self.consecutive_infrastructure = 0
        self.tripped = False

    def success(self) -> FailureState:
        self.consecutive = 0
        self.consecutive_infrastructure = 0
        return self._state()

    def failure(self, kind: ErrorKind) -> FailureState:
        self.consecutive += 1
        if kind == "infrastructure":
            self.consecutive_infrastructure += 1
            if self.consecutive_infrastructure >= self.breaker_threshold:
                self.tripped = True
        else:
            self.consecutive_infrastructure = 0
        return self._state()

    def _state(self) -> FailureState:
        return FailureState(
            self.consecutive,
            self.consecutive_infrastructure,
            self.consecutive >= self.show_elements_after,
            self.tripped,
        )


# --- data ------------------------------------------------------------------------------------


def deep_merge(base: Any, update: Any) -> Any:
    """``update`` merged into a copy of ``base``: lists append, dicts recurse, anything else
    (or a type mismatch) is replaced by ``update``. Neither argument is modified."""
    if isinstance(base, dict) and isinstance(update, dict):
        out = dict(base)
        for key, value in update.items():
            out[key] = deep_merge(base[key], value) if key in base else _copy(value)
        return out
    if isinstance(base, list) and isinstance(update, list):
        return [*_copy(base), *_copy(update)]
    return _copy(update)


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> Path:
    """Write ``data`` as JSON so that a reader sees the old file or the new one, never half.

    The text goes to a temporary file in the same folder, is flushed and fsynced, then
    ``os.replace``-d over ``path`` (atomic on POSIX and Windows).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return target


def check_done_output(output: Any, schema: type[BaseModel] | dict[str, Any] | None) -> tuple[Any, list[str]]:
    """Validate a ``done`` output: ``(value, problems)``; ``problems`` empty when it fits.

    With a pydantic model the value becomes an instance; with a JSON Schema it stays data.
    With no schema anything goes (``None`` included).
    """
    if schema is None:
        return output, []
    if output is None:
        return None, ["done needs an 'output' matching the required output schema; it was missing"]
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        try:
            return schema.model_validate(output), []
        except ValidationError as exc:
            return output, [
                "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e["loc"]) + ": " + e["msg"]
                for e in exc.errors(include_url=False)[:20]
            ]
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(output), key=lambda e: list(e.absolute_path))
    return output, [
        "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path) + ": " + e.message
        for e in errors[:20]
    ]


# --- history ---------------------------------------------------------------------------------


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


# --- long-horizon extras -----------------------------------------------------------------------


def item_count(data: Any) -> int | None:
    """How many items ``data`` holds: the length of a list, or of the only list value of an
    object (``{"items": [a, b], "pages_seen": 3}`` holds 2); ``None`` when it is not clear."""
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="python")
    if isinstance(data, list):
        return len(data)
    if isinstance(data, Mapping):
        lists = [v for v in data.values() if isinstance(v, list)]
        if len(lists) == 1:
            return len(lists[0])
    return None


_PAGINATION = re.compile(
    r"^(next( page| results?| »| ›|\s*[»›>→])?|[»›→]|>|load more.*|show more.*|more results|see more results"
    r"|view more.*|older (posts|entries)|page suivante|weiter|siguiente)$",
    re.IGNORECASE,
)


def is_pagination_control(line: str) -> bool:
    """Whether an outline line (``[0-12] link: Next page``) or an instruction names a "next
    page" / "load more" control: a link or button whose name is one of the usual labels."""
    text = line.strip()
    element = parse_line(text)
    if element is not None:
        if element.role not in ("link", "button"):
            return False
        text = element.name
    text = re.sub(r"^(click|press|tap|open)( on)?( the)?\s+", "", text.strip().strip("'\""), flags=re.IGNORECASE)
    text = re.sub(r"\s+(link|button)$", "", text, flags=re.IGNORECASE).strip()
    return bool(_PAGINATION.match(text))


def count_actionable(outline: str, roles: Collection[str]) -> int:
    """Outline lines whose role is one of ``roles`` and that are not disabled."""
    return sum(1 for e in parse_outline(outline) if e.role in roles and "disabled" not in e.flags)


def batch_abort_reason(
    *, url_before: str, url_now: str, navigations: int, actionable_before: int, actionable_now: int, max_shift: float = 0.2
) -> str | None:
    """Why the rest of a multi-action batch must not run, or ``None`` when it may go on: a
    main-frame navigation, a changed URL, or a shift of more than ``max_shift`` (20%) in the
    number of actionable elements since the batch started."""
    if navigations:
        return "the page navigated"
    if normalise_url(url_before) != normalise_url(url_now):
        return f"the URL changed to {url_now}"
    if actionable_before == 0:
        shifted = actionable_now > 0
    else:
        shifted = abs(actionable_now - actionable_before) / actionable_before > max_shift
    if shifted:
        return f"the number of actionable elements changed from {actionable_before} to {actionable_now}"
    return None
