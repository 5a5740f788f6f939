"""The batch task spec (JSON) and the samples a run works through."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .._errors import ConfigurationError
from .._inputs import check_inputs
from ..browser._guard import check_patterns
from ._evidence import safe_component

__all__ = [
    "Discovery", "TaskSpec", "Sample", "load_spec", "samples_from_csv", "samples_from_json", "samples_from_file",
    "sample_from_url", "sample_id_for_url", "DEFAULT_MAX_CELL_CHARS",
]


class Discovery(BaseModel):
    """Collect the sample URLs from a listing page: every link whose absolute URL matches
    ``link_pattern`` (a regular expression, searched), in page order, without duplicates."""

    model_config = ConfigDict(extra="forbid")

    url: str
    link_pattern: str = ".*"
    limit: int | None = Field(default=None, ge=1)

    @field_validator("link_pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"link_pattern is not a valid regular expression: {exc}") from exc
        return value


class TaskSpec(BaseModel):
    """What to do with every sample.

    ``instructions`` is the agent prompt (what to do on each sample's page, on top of ``goal``);
    ``output_schema`` a JSON Schema for the data; a ``done`` sample missing one of
    ``required_fields`` becomes ``partial_success``, one missing a ``required_screenshots``
    name becomes ``needs_review``. ``max_time`` is in seconds per sample. ``expected_items``
    also reaches the agent: it is told to finish once it has saved that many items, and a
    ``done`` with fewer is ``partial_success``. ``allowed_domains`` (glob patterns, e.g.
    ``["shop.example", "*.cdn.example"]``) holds every row's browser context to those hosts for
    the whole row, whatever its runner does; what was refused is the row's ``blocked`` list.
    ``trace`` (``stagehand-py run --trace``): a Playwright trace of every row's context, kept as the
    row's ``trace.zip`` (``"on"``) or only for a row that did not end ``done``
    (``"retain-on-failure"``), every variable value scrubbed; ``playwright show-trace`` opens it.
    """

    model_config = ConfigDict(extra="forbid")

    goal: str
    instructions: str = ""
    output_schema: dict[str, Any] | None = None
    required_fields: list[str] = Field(default_factory=list)
    required_screenshots: list[str] = Field(default_factory=list)
    max_steps: int = Field(default=20, ge=1)
    max_time: float = Field(default=300.0, gt=0)
    expected_items: int | None = Field(default=None, ge=1)
    discovery: Discovery | None = None
    #: A few words of the task; run memory ranks its notes by overlap with them and the goal.
    keywords: list[str] = Field(default_factory=list)
    allowed_domains: list[str] | None = None
    trace: Literal["on", "retain-on-failure", "off"] = "off"

    @field_validator("allowed_domains")
    @classmethod
    def _patterns(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else list(check_patterns(value))  # a bad pattern: an error before any row

    @property
    def prompt(self) -> str:
        """The instruction a sample's agent receives (the sample's URL and data are added per sample)."""
        return f"{self.goal}\n\n{self.instructions}".strip()


class Sample(BaseModel):
    """One unit of work: an id (a safe folder name), a start URL and the CSV row it came from."""

    model_config = ConfigDict(frozen=True)

    id: str
    url: str
    data: dict[str, str] = Field(default_factory=dict)
    #: Why the row cannot run (a bad row of the samples file), recorded as its error; else None.
    input_error: str | None = None


def load_spec(path: str | Path) -> TaskSpec:
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"cannot read the task spec {path}: {exc}") from exc
    try:
        spec = TaskSpec.model_validate(raw)
    except ValidationError as exc:
        raise ConfigurationError(f"the task spec {path} is not valid:\n{exc}") from exc
    check_inputs(f"the task spec {path}", schema=spec.output_schema, schema_param="output_schema")
    return spec


def sample_id_for_url(url: str) -> str:
    """A readable, filesystem-safe id from a URL: host and path, e.g. ``127.0.0.1_products_1.html``."""
    parts = urlsplit(url)
    text = f"{parts.hostname or 'local'}{parts.path}" + (f"_{parts.query}" if parts.query else "")
    return safe_component(text)


def sample_from_url(url: str) -> Sample:
    if not urlsplit(url).scheme:
        raise ConfigurationError(f"--url needs an absolute URL (with http:// or https://), got {url!r}.")
    return Sample(id=sample_id_for_url(url), url=url)


#: The largest cell (in characters) a samples file may hold by default; a bigger cell makes its
#: row a per-row error (``--max-cell-size`` sets another bound).
DEFAULT_MAX_CELL_CHARS = 1_000_000
_ID_COLUMNS = ("id", "sample_id")


def _decode(path: Path, raw: bytes) -> str:
    """The text of a samples file: UTF-8 (with or without a BOM) or UTF-16 with its BOM; else a
    typed error naming the first line that is not UTF-8."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return raw.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise ConfigurationError(f"{path} starts with a UTF-16 mark but is not valid UTF-16: {exc}") from exc
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigurationError(
            f"{path} line {line} is not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}): save the file as "
            "UTF-8 (in a spreadsheet: \"CSV UTF-8\") and run again."
        ) from exc


def _read_samples_file(path: Path) -> str:
    try:
        return _decode(path, path.read_bytes())
    except OSError as exc:
        raise ConfigurationError(f"cannot read the samples file {path}: {exc}") from exc


class _SampleMaker:
    """Turns records of a samples file into samples: safe unique ids, and a row that cannot run
    (no url, cells that do not match the header, a cell over the size bound) kept as a sample
    with ``input_error`` set, so the run records it as that row's error instead of stopping."""

    def __init__(self, path: Path, max_cell_chars: int) -> None:
        if max_cell_chars < 1:
            raise ConfigurationError(f"the largest cell size must be at least 1 character, got {max_cell_chars}")
        self.path, self.max_cell_chars = path, max_cell_chars
        self.samples: list[Sample] = []
        self._seen: set[str] = set()

    def add(self, where: str, record: dict[str, str], problem: str | None = None) -> None:
        """One record; ``where`` names it in the file (``line 7``, ``item 3``)."""
        data, too_big = {}, []
        for key, value in record.items():
            if len(value) > self.max_cell_chars:
                too_big.append(f"{key!r} ({len(value):,} characters)")
            elif key not in ("url", *_ID_COLUMNS):
                data[key] = value
        url = record.get("url", "").strip() if len(record.get("url", "")) <= self.max_cell_chars else ""
        if problem is None and too_big:
            problem = (f"the cell {', '.join(too_big)} is over the largest cell size of {self.max_cell_chars:,} "
                       "characters: shorten it, or raise the bound (--max-cell-size / max_cell_chars=)")
        if problem is None and not url:
            problem = "the url is empty"
        given = next((record[c].strip() for c in _ID_COLUMNS if record.get(c, "").strip()), "")
        given = given if len(given) <= self.max_cell_chars else ""
        base = safe_component(given) if given else (sample_id_for_url(url) if url else safe_component(where))
        sample_id, n = base, 2
        while sample_id in self._seen:
            sample_id, n = f"{base}_{n}", n + 1
        self._seen.add(sample_id)
        error = f"{self.path} {where}: {problem}" if problem else None
        self.samples.append(Sample(id=sample_id, url=url, data=data, input_error=error))


def samples_from_csv(path: str | Path, *, max_cell_chars: int = DEFAULT_MAX_CELL_CHARS) -> list[Sample]:
    """Samples from a CSV with a ``url`` column and optionally ``id`` / ``sample_id``; the other
    columns are the sample's data (given to the agent as context). Ids are made safe and unique.

    UTF-8 (a BOM is fine) or UTF-16 with a BOM; blank lines are skipped. A row that cannot run --
    fewer or more cells than the header, an empty url, a cell over ``max_cell_chars`` -- becomes a
    sample with ``input_error`` set, which the run records as that row's error.
    """
    path = Path(path)
    text = _read_samples_file(path)
    # The csv module's cell limit is one setting for the whole process; it is lifted while this
    # file is read (a big cell is the row's problem, decided below) and put back after.
    previous = csv.field_size_limit()
    csv.field_size_limit(max(previous, len(text) + 1))
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        header: list[str] | None = None
        maker = _SampleMaker(path, max_cell_chars)
        end = 0
        for cells in reader:
            line, end = end + 1, reader.line_num
            if not any(cell.strip() for cell in cells):
                continue  # a blank line, or one of empty cells only
            if header is None:
                header = [cell.strip() for cell in cells]
                if "url" not in header:
                    raise ConfigurationError(f"the samples CSV {path} needs a 'url' column; it has {', '.join(header)}.")
                continue
            problem = None
            if len(cells) != len(header):
                problem = (f"{len(cells)} cells where the header has {len(header)}: quote cells that hold a comma, "
                           "and give every row one cell per column")
            record = {name: value for name, value in zip(header, cells, strict=False) if name}
            maker.add(f"line {line}", record, problem)
    except csv.Error as exc:
        raise ConfigurationError(f"{path} line {reader.line_num}: not readable as CSV: {exc}") from exc
    finally:
        csv.field_size_limit(previous)
    return maker.samples


def samples_from_json(path: str | Path, *, max_cell_chars: int = DEFAULT_MAX_CELL_CHARS) -> list[Sample]:
    """Samples from a JSON array of objects (``.json``) or one object per line (``.jsonl``), with
    the same keys as the CSV's columns; other values than text are kept as their JSON text. A
    line or item that cannot run is kept with ``input_error`` set, as in :func:`samples_from_csv`."""
    path = Path(path)
    text = _read_samples_file(path)
    maker = _SampleMaker(path, max_cell_chars)
    items: list[tuple[str, Any]] = []
    if path.suffix.lower() == ".jsonl":
        for line, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                items.append((f"line {line}", json.loads(raw)))
            except ValueError as exc:
                items.append((f"line {line}", f"not valid JSON ({exc})"))
    else:
        try:
            loaded = json.loads(text)
        except ValueError as exc:
            raise ConfigurationError(f"{path} is not valid JSON: {exc}") from exc
        if not isinstance(loaded, list):
            raise ConfigurationError(f"{path} must hold a JSON array of sample objects, got {type(loaded).__name__}")
        items = [(f"item {n}", item) for n, item in enumerate(loaded, start=1)]
    for where, item in items:
        if isinstance(item, dict):
            record = {str(k): v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for k, v in item.items()}
            maker.add(where, record)
        else:
            problem = item if isinstance(item, str) else f"a {type(item).__name__}, not an object with a url"
            maker.add(where, {}, problem)
    return maker.samples


def samples_from_file(path: str | Path, *, max_cell_chars: int = DEFAULT_MAX_CELL_CHARS) -> list[Sample]:
    """Samples from a ``.json`` or ``.jsonl`` file, else from a CSV."""
    if Path(path).suffix.lower() in (".json", ".jsonl"):
        return samples_from_json(path, max_cell_chars=max_cell_chars)
    return samples_from_csv(path, max_cell_chars=max_cell_chars)
