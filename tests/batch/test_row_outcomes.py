"""Every row ends in exactly one recorded outcome, whatever its work raises, and an interrupted
batch records what finished and marks the rest cancelled (real Chromium, the local product pages)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from stagehand_py.batch import EvidenceStore, Sample, SampleContext, SampleOutcome, TaskSpec, run_batch, write_reports

from ._hostile_rows import act_up

SPEC = TaskSpec(goal="Record the title", max_time=60)


class Boom(BaseException):
    """A BaseException a library might raise that is neither Exception nor the user's interrupt."""


async def misbehaving_runner(ctx: SampleContext) -> SampleOutcome:
    await ctx.page.goto(ctx.sample.url)
    kind = ctx.sample.data["kind"]
    await act_up(kind)
    if kind == "system_exit":
        sys.exit(3)
    if kind == "base_exception":
        raise Boom("odd")
    if kind == "not_an_outcome":
        return {"status": "done"}  # type: ignore[return-value]
    return SampleOutcome(status="done", data={"title": await ctx.page.title()})


KINDS = ["fine", "raise_cancelled", "cancel_own_task", "system_exit", "base_exception", "not_an_outcome", "fine"]


async def test_a_rows_base_exception_is_its_error_and_the_batch_goes_on(server, browser, tmp_path: Path) -> None:
    samples = [Sample(id=f"r{i}", url=server.url(f"products/{i % 6 + 1}.html"), data={"kind": kind})
               for i, kind in enumerate(KINDS)]
    result = await run_batch(samples, spec=SPEC, runner=misbehaving_runner, browser=browser, run_dir=tmp_path / "run",
                             concurrency=3)
    errors = {sid: (r["status"], r["error"]) for sid, r in result.results.items()}
    assert errors == {
        "r0": ("done", None),
        "r1": ("failed", "CancelledError: the task gave up"),
        "r2": ("failed", "CancelledError (raised by the sample's work)"),
        "r3": ("failed", "SystemExit: 3"),
        "r4": ("failed", "Boom: odd"),
        "r5": ("failed", "TypeError: the sample runner returned dict, not a SampleOutcome"),
        "r6": ("done", None),
    }
    for sid in errors:  # each recorded once, complete
        assert json.loads((tmp_path / "run" / sid / "checkpoint.json").read_text())["state"] == "complete"
    write_reports(tmp_path / "run", result.results)
    assert (tmp_path / "run" / "combined.csv").read_bytes().count(b"\r\n") == 8  # the header and seven rows


async def test_an_interrupted_batch_records_what_finished_and_cancels_the_rest(server, browser, tmp_path: Path) -> None:
    started: list[str] = []
    release = asyncio.Event()

    async def runner(ctx: SampleContext) -> SampleOutcome:
        started.append(ctx.sample.id)
        if ctx.sample.id != "r0":
            await release.wait()  # the rows after the first hang until the batch is interrupted
        await ctx.page.goto(ctx.sample.url)
        return SampleOutcome(status="done", data={"title": await ctx.page.title()})

    samples = [Sample(id=f"r{i}", url=server.url(f"products/{i + 1}.html")) for i in range(4)]
    run_dir = tmp_path / "run"
    batch = asyncio.create_task(run_batch(samples, spec=SPEC, runner=runner, browser=browser, run_dir=run_dir, concurrency=2))
    while not ((run_dir / "r0" / "checkpoint.json").exists()
               and json.loads((run_dir / "r0" / "checkpoint.json").read_text())["state"] == "complete"
               and len(started) == 3):  # r0 finished, r1 and r2 hang, r3 waits for a free slot
        await asyncio.sleep(0.05)
    batch.cancel()  # what Ctrl-C does to the CLI's task
    with pytest.raises(asyncio.CancelledError):
        await batch
    states = {s.id: json.loads((run_dir / s.id / "checkpoint.json").read_text()) for s in samples}
    assert {sid: c["state"] for sid, c in states.items()} == {"r0": "complete", "r1": "cancelled", "r2": "cancelled",
                                                               "r3": "cancelled"}
    assert [states[sid]["attempt"] for sid in ("r1", "r2", "r3")] == [1, 1, 0]  # r3 had not started
    # Resume runs exactly the cancelled rows, and every row ends done.
    release.set()
    started.clear()
    resumed = await run_batch(samples, spec=SPEC, runner=runner, browser=browser, run_dir=run_dir, resume=True)
    assert sorted(started) == ["r1", "r2", "r3"] and resumed.skipped == ["r0"]
    assert {sid: r["status"] for sid, r in resumed.results.items()} == dict.fromkeys(("r0", "r1", "r2", "r3"), "done")
    assert [json.loads((run_dir / sid / "result.json").read_text())["attempt"] for sid in ("r1", "r2", "r3")] == [2, 2, 1]


async def test_a_row_whose_evidence_cannot_be_written_still_has_its_outcome(server, browser, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    original = EvidenceStore.write_bytes

    def refuse_one(self: EvidenceStore, relative: str, data: bytes) -> None:
        if relative == "bad/result.json":
            raise OSError(28, "No space left on device")
        original(self, relative, data)

    monkeypatch.setattr(EvidenceStore, "write_bytes", refuse_one)
    samples = [Sample(id=sid, url=server.url("products/1.html"), data={"kind": "fine"}) for sid in ("good", "bad")]
    result = await run_batch(samples, spec=SPEC, runner=misbehaving_runner, browser=browser, run_dir=tmp_path / "run")
    assert result.results["good"]["status"] == "done"
    assert result.results["bad"]["status"] == "failed"
    assert result.results["bad"]["error"] == "its evidence could not be written: OSError: [Errno 28] No space left on device"
