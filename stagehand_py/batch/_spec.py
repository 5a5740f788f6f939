"""The batch task spec (JSON) and the samples a run works through."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .._errors import ConfigurationError
from .._inputs import check_inputs
from ._evidence import safe_component

__all__ = ["Discovery", "TaskSpec", "Sample", "load_spec", "samples_from_csv", "sample_from_url", "sample_id_for_url"]


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
    ``done`` with fewer is ``partial_success``.
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


def samples_from_csv(path: str | Path) -> list[Sample]:
    """Samples from a CSV with a ``url`` column and optionally ``id`` / ``sample_id``; the other
    columns are the sample's data (given to the agent as context). Ids are made safe and unique."""
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.DictReader(handle))
    except OSError as exc:
        raise ConfigurationError(f"cannot read the samples CSV {path}: {exc}") from exc
    if rows and "url" not in rows[0]:
        raise ConfigurationError(f"the samples CSV {path} needs a 'url' column; it has {', '.join(rows[0])}.")
    samples: list[Sample] = []
    seen: set[str] = set()
    for number, row in enumerate(rows, start=2):  # line 1 is the header
        url = (row.get("url") or "").strip()
        if not url:
            raise ConfigurationError(f"{path} line {number}: the url is empty.")
        given = (row.get("id") or row.get("sample_id") or "").strip()
        base = safe_component(given) if given else sample_id_for_url(url)
        sample_id, n = base, 2
        while sample_id in seen:
            sample_id, n = f"{base}_{n}", n + 1
        seen.add(sample_id)
        data = {k: v for k, v in row.items() if k not in ("url", "id", "sample_id") and k is not None}
        samples.append(Sample(id=sample_id, url=url, data=data))
    return samples
