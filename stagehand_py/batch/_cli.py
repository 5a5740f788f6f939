"""``stagehand-py run``: the batch evidence runner's command line.

::

    stagehand-py run --task task.json --samples samples.csv --concurrency 3 --rate-limit 1
    stagehand-py run --task task.json --url https://example.com/item/1
    stagehand-py run --task task.json              # the spec's "discovery" lists the samples
    stagehand-py run --resume                      # finish the latest run in ./evidence
    stagehand-py run --prompt "Go to https://shop.example/products.html and record each product's price"
    stagehand-py run --task task.json --samples samples.csv --memory --fallback-model anthropic/claude-haiku-4-5
    stagehand-py run --task task.json --samples samples.csv --engine ray --address auto --evidence-dir s3://bucket/evidence
    stagehand-py run --task task.json --samples samples.csv --trace retain-on-failure
    stagehand-py show evidence/run_20261128T101500Z      # every row's run.html, as text (--open: the browser)
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .._errors import ConfigurationError, StagehandError
from ..llm import LLMClient
from ..llm._model_files import FETCH_COMMAND
from ..llm._policy import default_model
from ._evidence import EvidenceStore
from ._factory import DEFAULT_RUNNER, RunnerFactory
from ._memory import RunMemory
from ._planner import plan_task, save_plan
from ._replay_cli import add_replay_parser
from ._replay_cli import main as replay_main
from ._report import write_reports
from ._runner import CANCELLED, STATUSES, BatchResult, new_run_dir, recorded_results, run_batch
from ._spec import DEFAULT_MAX_CELL_CHARS, Sample, TaskSpec, load_spec, sample_from_url, samples_from_file

if TYPE_CHECKING:
    from ._ray_engine import RayOptions

__all__ = ["main", "build_parser"]

_T = TypeVar("_T")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stagehand-py", description="stagehand_py command line")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a task over many samples and keep evidence for each")
    run.add_argument("--task", type=Path, help="task spec (JSON); optional with --resume")
    run.add_argument("--prompt", help="the task in plain English instead of --task: a model plans the task spec and "
                     "the samples (saved as generated_task_spec.json in the run folder)")
    source = run.add_mutually_exclusive_group()
    source.add_argument("--samples", type=Path, help="CSV with a url column (and optionally id), or a .json array / "
                        ".jsonl file of objects with the same keys")
    source.add_argument("--url", action="append", help="one sample URL (repeatable)")
    run.add_argument("--max-cell-size", type=int, default=DEFAULT_MAX_CELL_CHARS, metavar="CHARS",
                     help="the largest cell of --samples; a row with a bigger one is recorded as that row's error "
                     f"(default: {DEFAULT_MAX_CELL_CHARS:,})")
    run.add_argument("--evidence-dir", default="evidence",
                     help="where run_<timestamp>/ goes: a folder or an fsspec URL such as s3://bucket/evidence (default: evidence)")
    run.add_argument("--resume", nargs="?", const="latest", metavar="RUN_DIR",
                     help="continue a run, skipping completed samples (default: the latest run in --evidence-dir)")
    run.add_argument("--concurrency", type=int, default=2, help="samples at once (default: 2)")
    run.add_argument("--rate-limit", type=float, default=1.0, metavar="SECONDS",
                     help="minimum seconds between sample starts on one host (default: 1; 0 = off)")
    run.add_argument("--model", help="model for the agent, e.g. openai/gpt-4.1-mini (default: from the environment)")
    run.add_argument("--runner", default=DEFAULT_RUNNER, metavar="MODULE:FACTORY",
                     help="factory(model=...) returning the per-sample runner (default: stagehand_py's agent)")
    long = run.add_argument_group("long-horizon options (all off by default)")
    long.add_argument("--memory", action="store_true",
                      help="run-scoped memory: patterns from done samples and failure notes from failed ones, kept in "
                      "the run folder (memory.json) and offered to later samples; kept on with --resume")
    long.add_argument("--memory-model", help="the cheap model that distils patterns (default: --model)")
    long.add_argument("--fallback-model", help="model that gets one attempt when --model's retries run out on a "
                      "rate limit, server or connection error")
    long.add_argument("--multi-action", type=int, nargs="?", const=3, metavar="N",
                      help="let the agent chain up to N actions per step (default N: 3)")
    long.add_argument("--pagination-bonus", type=int, default=0, metavar="STEPS",
                      help="bonus steps per click on a next page / load more control (at most 20 per sample)")
    run.add_argument("--trace", choices=("on", "retain-on-failure", "off"), default=None,
                     help="a Playwright trace per row, kept as the row's trace.zip (retain-on-failure: rows not done "
                     "only), every variable value scrubbed; each row also gets a run.html (stagehand-py show)")
    run.add_argument("--headed", action="store_true", help="show the browser")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_engine_arguments(run)
    # Parsed by stagehand_py.mcp (see main): listed here so that --help shows it.
    commands.add_parser("mcp", help="serve the browser to an MCP client (stagehand-py mcp --help)", add_help=False)
    add_replay_parser(commands)
    # Parsed by stagehand_py.llm._model_cli (see main): listed here so that --help shows it.
    commands.add_parser("model", help="fetch, list and locate the embedded model (stagehand-py model --help)",
                        add_help=False)
    # Parsed by stagehand_py._viewer._show (see main): listed here so that --help shows it.
    commands.add_parser("show", help="print or open a run's run.html (stagehand-py show --help)", add_help=False)
    return parser


def _add_engine_arguments(run: argparse.ArgumentParser) -> None:
    engine = run.add_argument_group("where rows run (see docs/guides/ray.md)")
    engine.add_argument("--engine", choices=("local", "ray"), default="local",
                        help="local: browser contexts in this process (default); ray: worker actors on a Ray cluster")
    engine.add_argument("--address", help="the Ray cluster: auto, ray://host:port or host:port (default: start a "
                        "one-node cluster on this machine)")
    engine.add_argument("--workers", type=int, default=2, help="Ray worker actors, one browser each (default: 2)")
    engine.add_argument("--browser-endpoint", metavar="URL",
                        help="use a remote browser instead of launching Chromium: a CDP URL (http://host:port) or a "
                        "Playwright server (ws://host:port/...)")


def _agent_options(args: argparse.Namespace) -> dict[str, Any]:
    """The long-horizon agent options given on the command line (only those that are on)."""
    options: dict[str, Any] = {}
    if args.fallback_model:
        options["fallback_model"] = args.fallback_model
    if args.multi_action is not None:
        if args.multi_action < 2:
            raise SystemExit("--multi-action N needs N of at least 2")
        options["multi_action"] = True
        options["max_actions_per_step"] = args.multi_action
    if args.pagination_bonus:
        if args.pagination_bonus < 0:
            raise SystemExit("--pagination-bonus must be 0 or more")
        options["pagination_bonus_steps"] = args.pagination_bonus
    return options


def _model_client(model: str | None) -> LLMClient:
    """A client for the planner or the memory model: ``model``, or the default from the environment."""
    if model is not None:
        return LLMClient(model)
    choice = default_model()
    if choice is None:
        raise SystemExit("--prompt and --memory need a model: pass --model (or --memory-model), set "
                         f"OPENAI_API_KEY or ANTHROPIC_API_KEY, or install the embedded model ({FETCH_COMMAND})")
    return LLMClient(choice.model, base_url=choice.base_url)


def _resolve_run_dir(args: argparse.Namespace) -> tuple[EvidenceStore, bool]:
    if args.resume is None:
        return new_run_dir(args.evidence_dir), False
    if args.resume != "latest":
        run = EvidenceStore(args.resume)
        if run.read_json("run.json") is None:
            raise SystemExit(f"--resume {run}: not a run folder (no run.json in it)")
        return run, True
    parent = EvidenceStore(args.evidence_dir)
    runs = parent.runs()
    if not runs:
        raise SystemExit(f"--resume: no run to resume in {parent}")
    return parent.child(runs[-1]), True


class _Progress:
    """A rich progress bar on stderr with a count per status."""

    def __init__(self, total: int, *, enabled: bool) -> None:
        self.counts = dict.fromkeys(("running", *STATUSES), 0)
        self._state: dict[str, str] = {}
        self._bar: Any = None
        if enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(
                TextColumn("[bold]samples"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[counts]}"),
                TimeElapsedColumn(), console=Console(stderr=True), transient=False,
            )
            self._task = self._bar.add_task("samples", total=total, counts="")

    def __enter__(self) -> _Progress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.stop()

    def update(self, sample: Sample, status: str) -> None:
        before = self._state.get(sample.id)
        if before is not None:
            self.counts[before] -= 1
        self._state[sample.id] = status
        self.counts[status] = self.counts.get(status, 0) + 1
        if self._bar is not None:
            finished = sum(v for k, v in self.counts.items() if k != "running")
            text = "  ".join(f"{k} {v}" for k, v in self.counts.items() if v or k != "running")
            self._bar.update(self._task, completed=finished, counts=text)


def _stored(run_dir: EvidenceStore, read: Callable[[], _T]) -> _T:
    """A part of the stored ``run.json``, or a typed error when the file was damaged or edited."""
    try:
        return read()
    except (KeyError, TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        raise ConfigurationError(f"--resume {run_dir}: its run.json is damaged ({type(exc).__name__}: {exc}); "
                                 "start a new run with --task and --samples") from exc


async def _run(args: argparse.Namespace) -> tuple[BatchResult, bool]:
    """The run; ``True`` with it when the user interrupted it (the rows it stopped are recorded
    as cancelled, and the reports written all the same)."""
    from ._browser import open_batch_browser
    from ._discovery import discover_samples

    if args.prompt is not None and (args.task is not None or args.resume is not None):
        raise SystemExit("--prompt plans a new run: use it without --task and --resume")
    ray_options = _ray_options(args)  # checked before anything is started or written
    run_dir, resuming = _resolve_run_dir(args)
    stored = run_dir.read_json("run.json") if resuming else None
    planned: list[Sample] = []
    if args.prompt is not None:
        plan = await plan_task(args.prompt, client=_model_client(args.model))
        path = save_plan(run_dir, plan, prompt=args.prompt)
        print(f"planned task: {path}", flush=True)
        spec, planned = plan.spec, plan.samples
    elif args.task is not None:
        spec = load_spec(args.task)
    elif stored is not None:
        spec = _stored(run_dir, lambda: TaskSpec.model_validate(stored["spec"]))
    else:
        raise SystemExit("--task or --prompt is required (except with --resume)")
    if args.trace is not None:
        spec = spec.model_copy(update={"trace": args.trace})
    factory = RunnerFactory(args.runner, model=args.model, options=_agent_options(args))
    memory = None
    if args.memory or (stored is not None and stored.get("memory")):
        memory = RunMemory(run_dir, client=_model_client(args.memory_model or args.model))
    samples: list[Sample] | None = None
    if args.samples is not None:
        samples = samples_from_file(args.samples, max_cell_chars=args.max_cell_size)
    elif args.url:
        samples = [sample_from_url(u) for u in args.url]
    elif stored is not None:
        samples = _stored(run_dir, lambda: [Sample.model_validate(s) for s in stored["samples"]])
    elif planned:
        samples = planned
    elif spec.discovery is None:
        raise SystemExit("no samples: give --samples CSV, --url, or a \"discovery\" in the task spec")
    # The driver's own browser: the local engine's rows run in it; the Ray engine needs one only
    # to discover samples (its workers keep their own).
    browser = None
    if ray_options is None or samples is None:
        browser = await open_batch_browser(args.browser_endpoint, headless=not args.headed)
    try:
        if samples is None:
            assert browser is not None and spec.discovery is not None
            samples = await discover_samples(browser.browser, spec.discovery)
        if not samples:
            raise SystemExit("no samples found")
        print(f"run folder: {run_dir}  ({len(samples)} samples{', resuming' if resuming else ''})", flush=True)
        interrupted = False
        with _Progress(len(samples), enabled=not args.no_progress) as progress:
            try:
                if ray_options is not None:
                    from ._ray_engine import run_batch_on_ray

                    if browser is not None:  # discovery is done: free it before the workers start theirs
                        await browser.close()
                        browser = None
                    result = await run_batch_on_ray(
                        samples, spec=spec, runner=factory, run_dir=run_dir, options=ray_options, rate_limit=args.rate_limit,
                        resume=resuming, on_status=progress.update, memory=memory,
                    )
                else:
                    assert browser is not None
                    result = await run_batch(
                        samples, spec=spec, runner=factory.build(), browser=browser.browser, run_dir=run_dir,
                        concurrency=args.concurrency, rate_limit=args.rate_limit, resume=resuming, on_status=progress.update,
                        memory=memory,
                    )
            except asyncio.CancelledError:  # Ctrl-C: the engine recorded every unfinished row as cancelled
                interrupted = True
                result = BatchResult(store=run_dir, results=recorded_results(run_dir, samples), skipped=[])
    finally:
        if browser is not None:
            await browser.close()
    write_reports(run_dir, result.results, title=f"{spec.goal[:80]} — {run_dir.name}")
    return result, interrupted


def _ray_options(args: argparse.Namespace) -> RayOptions | None:
    """The Ray engine's options (``None`` for the local engine); Ray itself is imported later, only if used."""
    if args.engine != "ray":
        if args.address is not None:
            raise SystemExit("--address is for --engine ray")
        return None
    from ._ray_engine import RayOptions

    options = RayOptions(address=args.address, workers=args.workers, contexts_per_worker=args.concurrency,
                         browser_endpoint=args.browser_endpoint, headless=not args.headed)
    options.check()
    return options


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["mcp"]:
        from ..mcp._cli import main as mcp_main

        return mcp_main(argv[1:])
    if argv[:1] == ["replay"]:
        return replay_main(argv[1:])
    if argv[:1] == ["model"]:
        from ..llm._model_cli import main as model_main

        return model_main(argv[1:])
    if argv[:1] == ["show"]:
        from .._viewer._show import main as show_main

        return show_main(argv[1:])
    args = build_parser().parse_args(argv)
    if args.concurrency < 1:
        print("--concurrency must be at least 1", file=sys.stderr)
        return 2
    try:
        result, interrupted = asyncio.run(_run(args))
    except KeyboardInterrupt:  # a second Ctrl-C, or one before the rows started
        print("\ninterrupted: completed samples are kept; continue with `stagehand-py run --resume`", file=sys.stderr)
        return 130
    except StagehandError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    counts = result.counts
    print("  ".join(f"{k} {v}" for k, v in counts.items()) + (f"  (skipped, already complete: {len(result.skipped)})" if result.skipped else ""))
    print(f"combined: {result.store.path_of('combined.csv')}\nreport:   {result.store.path_of('report.html')}")
    if interrupted:
        print(f"\ninterrupted: {sum(counts.values()) - counts.get(CANCELLED, 0)} finished samples are kept and "
              f"{counts.get(CANCELLED, 0)} are recorded as cancelled; continue with "
              f"`stagehand-py run --resume {result.store}`", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":  # python -m stagehand_py.batch._cli
    sys.exit(main())
