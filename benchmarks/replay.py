"""Agent runs that replay: the local agent tasks run once with the embedded model, then replayed.

    nice -n 5 python benchmarks/replay.py                       # all 8 tasks of local_agent.py
    python benchmarks/replay.py --only login wizard --max-steps 8

For each task of benchmarks/local_agent.py (a copy of tests/assets served on 127.0.0.1, one
Stagehand with the task's cache directory per phase):

1. ``live``: ``agent().execute(...)`` with the embedded model (the run is stored when it is done);
2. ``replay``: the same task again: model calls (0 expected), seconds, success (checked from
   outside the agent, as local_agent.py does) and whether it matches the live outcome;
3. ``drift``: one element of the served pages renamed (see :data:`DRIFTS`: a button where the task
   has one, else the link, tab or field label it uses): calls (1 expected: the heal of that step)
   and success. ``exercised`` says whether the stored run acts on that element at all (an agent
   that navigated by URL never clicks the renamed link: nothing to heal).

Prints one line per phase and a table; appends each phase to .bench/replay.json as it ends.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _local_bench import add_model_options, finish, load, markdown_table, open_model
from _server import ASSETS, StaticServer
from agent._script import AgentScript, Step, call
from local_agent import TASKS, Task

from stagehand_py import Stagehand, StagehandError
from stagehand_py.llm import LLMClient


@dataclass(frozen=True)
class Drift:
    """One element renamed in one served file: ``old`` becomes ``new`` in its markup; the element
    was the ``role`` named ``name`` and is named ``renamed`` after the change."""

    file: str
    old: str
    new: str
    role: str
    name: str
    renamed: str

    @property
    def label(self) -> str:
        return f"{self.role} {self.name!r} -> {self.renamed!r}"


#: Per task, the element renamed for the third phase: the task's button where it has one (the
#: issue's "one button renamed"); else the one link, tab or field label the task must use.
DRIFTS: dict[str, Drift] = {
    "login": Drift("forms.html", 'id="submit">Sign in</button>', 'id="submit">Log in</button>', "button", "Sign in",
                   "Log in"),
    "navigate-extract": Drift("site/page2.html", 'href="page3.html">Next</a>', 'href="page3.html">Continue</a>', "link",
                              "Next", "Continue"),
    "paginate": Drift("agent/list/2.html", ">Next page</a>", ">Continue</a>", "link", "Next page", "Continue"),
    "multi-field": Drift("forms.html", 'id="submit">Sign in</button>', 'id="submit">Log in</button>', "button",
                         "Sign in", "Log in"),
    "custom-dropdown": Drift("aria.html", '<span id="fruit-label">Favourite fruit</span>',
                             '<span id="fruit-label">Preferred fruit</span>', "combobox", "Favourite fruit",
                             "Preferred fruit"),
    "wizard": Drift("wizard/step3.html", ">Finish</button>", ">Complete</button>", "button", "Finish", "Complete"),
    "checkpoint": Drift("agent/list/2.html", ">Next page</a>", ">Continue</a>", "link", "Next page", "Continue"),
    "tab-then-extract": Drift("aria.html", 'tabindex="-1">Billing</button>', 'tabindex="-1">Payments</button>', "tab",
                              "Billing", "Payments"),
}


def _act(role: str, name: str, method: str = "click", *arguments: str) -> Step:
    return lambda seen: call("act", element_id=seen.id(role, name), method=method, arguments=list(arguments))


_PARTS = ["Anchor", "Bolt", "Cable", "Drill", "Epoxy", "File", "Gasket", "Hinge", "Insulation", "Jigsaw", "Knob", "Latch"]

#: ``--record scripted``: per task, the way a model that gets it right goes, for a machine too
#: loaded for the embedded model's first run (the replay and the drift phases are the same).
SCRIPTS: dict[str, list[Step | dict[str, Any]]] = {
    "login": [_act("textbox", "Username", "fill", "%user%"), _act("textbox", "Password", "fill", "%password%"),
              _act("button", "Sign in"), call("done", message="signed in")],
    "navigate-extract": [_act("link", "Next"), _act("link", "Next"),
                         call("done", message="page 3", output={"answer": "hello@example.test"})],
    "paginate": [_act("link", "Next page"), _act("link", "Next page"), _act("link", "Next page"),
                 call("done", message="12 parts", output={"names": _PARTS})],
    "multi-field": [_act("checkbox", "Remember me"), _act("radio", "Pro"),
                    _act("combobox", "Country", "select_option", "Germany"), _act("button", "Sign in"),
                    call("done", message="submitted")],
    "custom-dropdown": [_act("combobox", "Favourite fruit"), _act("option", "Cherry"), call("done", message="cherry")],
    "wizard": [_act("textbox", "Full name", "fill", "Ada Lovelace"), _act("button", "Continue"),
               _act("textbox", "Email", "fill", "ada@example.test"), _act("button", "Continue"),
               _act("combobox", "Plan", "select_option", "Plus"), _act("checkbox", "I accept the terms"),
               _act("button", "Finish"), call("done", message="all done")],
    "checkpoint": [_act("link", "Next page"), _act("link", "Next page"),
                   call("done", message="3 pages", output={"names": ["Anchor", "Drill", "Gasket"]})],
    "tab-then-extract": [_act("tab", "Billing"), call("done", message="billing", output={"answer": "Billing settings"})],
}


@dataclass
class Phase:
    task: str
    phase: str
    success: bool
    status: str
    calls: int
    seconds: float
    replayed: int
    healed: int
    fell_back: bool
    detail: str
    #: drift phase: the renamed element, and whether the stored run acts on it.
    drift: str = ""
    exercised: bool | None = None


def acts_on(cache: Path, drift: Drift) -> bool:
    """Whether a run stored under ``cache`` acts on the element ``drift`` renames."""
    for path in (cache / "agent-runs").glob("*.json"):
        steps = json.loads(path.read_text(encoding="utf-8")).get("steps", [])
        if any(s.get("kind") == "act" and (s.get("role"), s.get("name")) == (drift.role, drift.name) for s in steps):
            return True
    return False


async def run_phase(task: Task, phase: str, client: LLMClient, server: StaticServer, folder: Path, *,
                    max_steps: int, task_timeout: float, token_budget: int) -> Phase:
    cache = folder / f"cache-{task.name}"
    sh = await Stagehand.launch(model=client, token_budget=token_budget, cache_dir=cache)
    before = client.metrics.total
    started = time.perf_counter()
    status, detail, success, replayed, healed, fell_back = "error", "", False, 0, 0, False
    try:
        await sh.page.goto(server.url(task.page))
        agent = sh.agent(allowed_domains=["127.0.0.1"], checkpoint_path=folder / f"{task.name}-{phase}.json")
        result = await agent.execute(task.instruction, max_steps=max_steps, output=task.output,
                                     variables=task.variables, timeout=task_timeout)
        status = result.status
        success, detail = await task.check(sh, result)
        if result.replay is not None:
            replayed, healed = len(result.replay.replayed), len(result.replay.healed)
            fell_back = result.replay.fell_back
            if fell_back:
                detail = f"{detail}; fell back: {result.replay.reason[:160]}"
        elif not phase.startswith("live"):
            detail = f"{detail}; no stored run: ran live"
    except StagehandError as exc:
        detail = f"{type(exc).__name__}: {str(exc)[:160]}"
    finally:
        await sh.close()
    calls = client.metrics.total.requests - before.requests
    return Phase(task.name, phase, success, status, calls, time.perf_counter() - started, replayed, healed, fell_back,
                 detail)


def table(phases: list[Phase]) -> str:
    """Tasks x phases: model calls, seconds, success; for a replay whether it matches the live outcome."""
    live = {p.task: p.success for p in phases if p.phase.startswith("live")}
    rows: list[list[object]] = []
    for p in phases:
        same = "" if p.phase.startswith("live") else ("yes" if p.success == live.get(p.task) else "no")
        drift = "" if not p.drift else f"{p.drift}{' (not in the stored run)' if p.exercised is False else ''}"
        rows.append([p.task, p.phase, "yes" if p.success else "no", same, p.calls, f"{p.seconds:.1f}", p.replayed,
                     p.healed, "yes" if p.fell_back else "no", drift])
    return markdown_table(["task", "phase", "done", "same as live", "model calls", "seconds", "replayed", "healed",
                           "fell back", "drift"], rows)


def _save(out: Path, record: dict[str, Any], phases: list[Phase]) -> None:
    """The run so far, rewritten after each phase (a run cut short keeps what it measured)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    runs = json.loads(out.read_text()) if out.exists() else []
    runs = [r for r in runs if r.get("started") != record["started"]]
    out.write_text(json.dumps([*runs, {**record, "phases": [asdict(p) for p in phases]}], indent=2))


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    add_model_options(parser)
    parser.add_argument("--max-steps", type=int, default=10)
    parser.add_argument("--task-timeout", type=float, default=400.0)
    parser.add_argument("--only", nargs="*", default=None, help=f"tasks (default: {', '.join(DRIFTS)})")
    parser.add_argument("--record", choices=["model", "scripted"], default="model",
                        help="the first run: the embedded model (default), or the scripted way of SCRIPTS (a machine "
                             "too loaded for the model's many calls; replay and drift still use the model)")
    parser.add_argument("--out", type=Path, default=ROOT / ".bench" / "replay.json")
    args = parser.parse_args(argv)
    path, model = open_model(args)
    client = LLMClient(model)
    folder = Path(tempfile.mkdtemp(prefix="replay-bench-"))
    site = folder / "assets"
    shutil.copytree(ASSETS, site)
    server = StaticServer(site).start()
    phases: list[Phase] = []
    names = args.only or list(DRIFTS)
    record: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%S"), "model": str(path), "record": args.record,
                              "max_steps": args.max_steps, "load_at_start": load()}
    try:
        for task in [t for t in TASKS if t.name in names]:
            drift = DRIFTS[task.name]
            original = (site / drift.file).read_text(encoding="utf-8")
            if drift.old not in original:
                raise SystemExit(f"{task.name}: {drift.old!r} is not in {drift.file}; update DRIFTS")
            exercised: bool | None = None
            for phase in ("live", "replay", "drift"):
                if phase == "drift":
                    # Read before the drift phase, which stores the healed run (the new name) over it.
                    exercised = acts_on(folder / f"cache-{task.name}", drift)
                    (site / drift.file).write_text(original.replace(drift.old, drift.new), encoding="utf-8")
                scripted = phase == "live" and args.record == "scripted"
                runner = LLMClient(AgentScript(list(SCRIPTS[task.name]))) if scripted else client
                outcome = await run_phase(task, "live (scripted)" if scripted else phase, runner, server, folder,
                                          max_steps=args.max_steps, task_timeout=args.task_timeout,
                                          token_budget=args.token_budget)
                if phase == "drift":
                    outcome.drift, outcome.exercised = drift.label, exercised
                phases.append(outcome)
                _save(args.out, record, phases)
                print(f"{task.name:17} {outcome.phase:15} {'done' if outcome.success else 'NOT DONE':8} {outcome.calls:3} calls "
                      f"{outcome.seconds:7.1f} s  replayed {outcome.replayed} healed {outcome.healed}  {outcome.detail}",
                      flush=True)
            (site / drift.file).write_text(original, encoding="utf-8")
    finally:
        server.stop()
        await model.aclose()
        shutil.rmtree(folder, ignore_errors=True)
    finish(table(phases))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
