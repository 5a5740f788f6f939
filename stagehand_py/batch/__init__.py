"""The batch evidence runner behind ``stagehand-py run``: a task spec, many samples, one
isolated browser context each, evidence on disk (hashed screenshots, results, action logs,
checkpoints), resumable, with ``combined.csv`` and ``report.html`` at the end.

Use it from Python with your own per-sample work::

    from stagehand_py.batch import SampleContext, SampleOutcome, TaskSpec, Sample, run_batch, write_reports

    async def runner(ctx: SampleContext) -> SampleOutcome:
        await ctx.page.goto(ctx.sample.url)
        await ctx.screenshot("page")
        return SampleOutcome(status="done", data={"title": await ctx.page.title()})
"""

from ._discovery import discover_samples
from ._evidence import EvidenceStore, SampleEvidence, safe_component
from ._factory import RunnerFactory
from ._memory import MemoryNote, RunMemory
from ._ray_engine import RayOptions, RayStartError, run_batch_on_ray  # imports Ray only when a run starts on it
from ._report import write_combined_csv, write_report_html, write_reports
from ._runner import (
    STATUSES,
    BatchResult,
    DomainRateLimiter,
    SampleContext,
    SampleOutcome,
    SampleRunner,
    SampleStatus,
    judge,
    new_run_dir,
    run_batch,
)
from ._spec import (
    Discovery,
    Sample,
    TaskSpec,
    load_spec,
    sample_from_url,
    samples_from_csv,
    samples_from_file,
    samples_from_json,
)

__all__ = [
    "TaskSpec",
    "Discovery",
    "Sample",
    "load_spec",
    "samples_from_csv",
    "samples_from_json",
    "samples_from_file",
    "sample_from_url",
    "discover_samples",
    "SampleContext",
    "SampleOutcome",
    "SampleRunner",
    "SampleStatus",
    "STATUSES",
    "SampleEvidence",
    "EvidenceStore",
    "safe_component",
    "RunMemory",
    "MemoryNote",
    "DomainRateLimiter",
    "BatchResult",
    "judge",
    "new_run_dir",
    "run_batch",
    "RunnerFactory",
    "RayOptions",
    "RayStartError",
    "run_batch_on_ray",
    "write_reports",
    "write_combined_csv",
    "write_report_html",
]
