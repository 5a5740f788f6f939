"""What the batch runner (``stagehand-py run``) adds to a sample's agent task."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

__all__ = ["sample_instruction", "SAVE_SCREENSHOT_DESCRIPTION"]

SAVE_SCREENSHOT_DESCRIPTION = (
    "Save a screenshot of the current page as evidence for this sample, under a short name "
    "(use the exact names the task asks for)."
)


def sample_instruction(
    task: str,
    *,
    url: str,
    sample_data: Mapping[str, str],
    required_fields: Sequence[str],
    required_screenshots: Sequence[str],
    expected_items: int | None,
) -> str:
    """The agent instruction for one sample: the task, where it starts, and what counts as done."""
    lines = [task.strip(), "", f"This sample starts at {url} (already open)."]
    if sample_data:
        lines.append("Sample details: " + json.dumps(dict(sample_data), ensure_ascii=False))
    if required_fields:
        lines.append("The output must fill these fields: " + ", ".join(required_fields) + ".")
    if expected_items is not None:
        lines.append(f"Expect about {expected_items} items.")
    if required_screenshots:
        names = ", ".join(f'"{n}"' for n in required_screenshots)
        lines.append(f"Before finishing, call save_screenshot once for each of these names: {names}.")
    return "\n".join(lines)
