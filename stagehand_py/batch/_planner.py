"""The task planner behind ``stagehand-py run --prompt "..."``: plain English in, a task spec
and a sample list out (one model call). The spec is saved as ``generated_task_spec.json`` in
the run folder -- a normal task spec, loadable with ``--task`` -- and the samples as
``generated_samples.csv``; from there the run is the same as one started with ``--task``.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._errors import ConfigurationError
from .._logging import logger
from .._prompts.batch import PLAN_FIELD_DESCRIPTIONS as D
from .._prompts.batch import plan_messages
from ..llm import LLMClient, SystemMessage, UserMessage
from ._evidence import EvidenceStore
from ._spec import Discovery, Sample, TaskSpec, sample_from_url

__all__ = ["GENERATED_SAMPLES", "GENERATED_SPEC", "PlannedTask", "plan_task", "save_plan"]

GENERATED_SPEC = "generated_task_spec.json"
GENERATED_SAMPLES = "generated_samples.csv"


class _Field(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description=D["field_name"])
    type: Literal["string", "number", "integer", "boolean", "array"] = Field(description=D["field_type"])
    description: str = Field(description=D["field_description"])


class _Plan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    goal: str = Field(description=D["goal"])
    system_prompt: str = Field(description=D["system_prompt"])
    output_fields: list[_Field] = Field(min_length=1, description=D["output_fields"])
    required_fields: list[str] = Field(description=D["required_fields"])
    keywords: list[str] = Field(description=D["keywords"])
    max_steps: int = Field(ge=1, le=100, description=D["max_steps"])
    expected_items: int | None = Field(description=D["expected_items"])
    needs_discovery: bool = Field(description=D["needs_discovery"])
    discovery_url: str | None = Field(description=D["discovery_url"])
    link_pattern: str | None = Field(description=D["link_pattern"])
    sample_urls: list[str] = Field(description=D["sample_urls"])


@dataclass(frozen=True)
class PlannedTask:
    """The planner's result: the spec (with ``discovery`` when samples come from a listing page)
    and the samples it named (empty when discovery supplies them)."""

    spec: TaskSpec
    samples: list[Sample]


def _schema(fields: list[_Field]) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for f in fields:
        prop: dict[str, Any] = {"type": f.type, "description": f.description}
        if f.type == "array":
            prop["items"] = {}
        props[f.name] = prop
    return {"type": "object", "properties": props, "required": [f.name for f in fields]}


def _to_task(plan: _Plan) -> PlannedTask:
    names = [f.name for f in plan.output_fields]
    unknown = [n for n in plan.required_fields if n not in names]
    if unknown:
        raise ConfigurationError(f"the planned task requires fields it does not define: {', '.join(unknown)}")
    discovery = None
    if plan.needs_discovery:
        if not plan.discovery_url:
            raise ConfigurationError("the planned task needs a discovery step but gave no discovery_url")
        discovery = Discovery(url=plan.discovery_url, link_pattern=plan.link_pattern or ".*")
    try:
        spec = TaskSpec(
            goal=plan.goal, instructions=plan.system_prompt, output_schema=_schema(plan.output_fields),
            required_fields=plan.required_fields, max_steps=plan.max_steps, expected_items=plan.expected_items,
            discovery=discovery, keywords=plan.keywords,
        )
    except ValidationError as exc:
        raise ConfigurationError(f"the planned task spec is not valid:\n{exc}") from exc
    samples: list[Sample] = []
    seen: set[str] = set()
    for url in dict.fromkeys(plan.sample_urls):
        sample = sample_from_url(url)
        sample_id, n = sample.id, 2
        while sample_id in seen:
            sample_id, n = f"{sample.id}_{n}", n + 1
        seen.add(sample_id)
        samples.append(sample.model_copy(update={"id": sample_id}))
    return PlannedTask(spec=spec, samples=samples)


async def plan_task(prompt: str, *, client: LLMClient) -> PlannedTask:
    """Turn a plain-English request into a :class:`PlannedTask` with one model call."""
    if not prompt.strip():
        raise ConfigurationError("--prompt needs the task in words, e.g. 'Go to X and extract Y for these ...'")
    system, user = plan_messages(prompt)
    answer = await client.generate([SystemMessage(system), UserMessage(user)], purpose="batch_plan", output=_Plan)
    planned = _to_task(answer.output)
    logger.info("task planner: goal %r, %d sample(s)%s", planned.spec.goal[:80], len(planned.samples),
                ", discovery " + planned.spec.discovery.url if planned.spec.discovery else "")
    return planned


def save_plan(run_dir: Path | str | EvidenceStore, planned: PlannedTask, *, prompt: str) -> Path | str:
    """Write ``generated_task_spec.json`` (a task spec, usable with ``--task``) and, when the
    planner named samples, ``generated_samples.csv`` (usable with ``--samples``)."""
    store = EvidenceStore.of(run_dir)
    store.write_json(GENERATED_SPEC, planned.spec.model_dump(mode="json", exclude_none=True))
    store.write_json("generated_prompt.json", {"prompt": prompt})
    if planned.samples:
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(["id", "url"])
        for s in planned.samples:
            writer.writerow([s.id, s.url])
        store.write_bytes(GENERATED_SAMPLES, buffer.getvalue().encode("utf-8"))
    return store.path_of(GENERATED_SPEC)
