"""The default per-sample work of ``stagehand-py run``: stagehand_py's agent on the sample's page."""

from __future__ import annotations

import hashlib
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .._prompts.batch import SAVE_SCREENSHOT_DESCRIPTION, sample_instruction
from .._stagehand import Stagehand
from ._runner import SampleContext, SampleOutcome, SampleRunner

__all__ = ["make_agent_runner"]


def _agent_timeout(max_time: float) -> float:
    """Leave the agent a margin inside the runner's hard limit to wrap up with what it has."""
    return max(1.0, max_time - min(10.0, max_time * 0.1))


def make_agent_runner(*, model: Any = None, **agent_options: Any) -> SampleRunner:
    """A :class:`SampleRunner` that opens the sample's URL and runs ``sh.agent().execute(...)``.

    ``model`` is a model string or object (default: from the environment, as ``Stagehand``
    picks it). The agent gets a ``save_screenshot(name)`` tool whose screenshots go straight
    into the sample's evidence folder (hashed as they are written); the agent's own
    screenshots are kept too, as ``NNN_step_<n>.png``. Its steps become ``action_log.json``.
    ``agent_options`` go to ``sh.agent(...)`` (e.g. ``fallback_model``, ``multi_action``,
    ``pagination_bonus_steps``); the spec's ``expected_items`` and the run memory's notes for
    the sample are passed on too.
    """

    async def run(ctx: SampleContext) -> SampleOutcome:
        from ..agent import tool_from_function

        spec = ctx.spec

        async def save_screenshot(name: str, stagehand: Stagehand) -> str:
            record = await ctx.screenshot(name)
            return f"saved {record['file']} (sha256 {record['sha256'][:12]})"

        tool = tool_from_function(save_screenshot, description=SAVE_SCREENSHOT_DESCRIPTION)
        # Downloads land in a scratch folder on the machine that runs the row; their bytes join the
        # sample's evidence (written once, by whoever records the row) and result.json lists them.
        scratch = tempfile.TemporaryDirectory(prefix="stagehand-downloads-")
        deadline = time.monotonic() + spec.max_time - 1.0  # the row's hard limit, less a second to keep the files
        sh = Stagehand(ctx.page, model=model, downloads_dir=scratch.name)
        try:
            response = await ctx.page.goto(ctx.sample.url)
            ctx.action_log.append({"step": 0, "tool": "goto", "args": {"url": ctx.sample.url},
                                   "ok": response is None or response.ok, "http_status": response.status if response else None})
            options = {"expected_items": spec.expected_items, **agent_options}
            if ctx.memory_notes:
                options["memory_notes"] = ctx.memory_notes
            agent = sh.agent(tools=[tool], **options)
            instruction = sample_instruction(
                spec.prompt, url=ctx.sample.url, sample_data=ctx.sample.data, required_fields=spec.required_fields,
                required_screenshots=spec.required_screenshots, expected_items=spec.expected_items,
            )
            result = await agent.execute(instruction, max_steps=spec.max_steps, output=spec.output_schema,
                                         timeout=_agent_timeout(spec.max_time))
        finally:
            # Every download the row started is kept or listed as failed, never dropped: wait for the
            # ones still saving (within what is left of the row's time), then copy them into evidence.
            await sh.finish_downloads(max(0.5, deadline - time.monotonic()))
            await sh.close()
            downloads, failures = _keep_downloads(ctx, sh)
            scratch.cleanup()
        ctx.action_log.extend(step.model_dump(mode="json") for step in result.steps)
        for shot in result.evidence.screenshots:
            if shot.data:
                ctx.evidence.add_screenshot(shot.data, name=f"step_{shot.step}", step=shot.step)
        data = result.output if result.output is not None else result.data
        if isinstance(data, BaseModel):
            data = data.model_dump(mode="json")
        return SampleOutcome(
            status=result.status, data=data, error=None if result.status == "done" else result.message,
            usage=result.usage.model_dump(mode="json"),
            extra={**({"downloads": downloads} if downloads else {}), **({"download_failures": failures} if failures else {})},
        )

    return run


def _keep_downloads(ctx: SampleContext, sh: Stagehand) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every saved download's bytes into the row's ``downloads/`` evidence folder under a name of
    its own, hashed from the bytes kept; with the downloads that could not be saved or kept."""
    kept: list[dict[str, Any]] = []
    failures = [asdict(failure) for failure in sh.failed_downloads]
    for saved in sh.downloads:
        try:
            data = Path(saved.path).read_bytes()
        except OSError as exc:
            failures.append({"suggested_filename": saved.suggested_filename, "url": saved.url,
                             "error": f"saved but could not be read back: {exc}"})
            continue
        file = ctx.evidence.add_file(saved.suggested_filename, data, folder="downloads")
        kept.append({**saved.model_dump(mode="json", exclude={"path", "sha256", "size"}), "file": file,
                     "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    return kept, failures
