"""Multi-step agent tasks run by the embedded model: does ``agent()`` finish them with no key?

    python benchmarks/local_agent.py                          # the pinned 1.5B, all tasks
    python benchmarks/local_agent.py --only login wizard --max-steps 6 --task-timeout 300

Eight tasks on the project's own test pages (tests/assets, served on 127.0.0.1), each a fresh
``sh.agent(...).execute(...)`` at temperature 0 on one loaded model:

- ``login``: sign in with ``%user%``/``%password%`` placeholders (values never reach the model);
- ``navigate-extract``: follow two links, then report a text from the last page;
- ``paginate``: collect every part name over four list pages;
- ``multi-field``: tick a box, pick a radio, choose a <select> option and submit;
- ``custom-dropdown``: open a div-only combobox and pick an option;
- ``wizard``: three form pages in a row (name, email, plan and terms);
- ``checkpoint``: collect prices over three list pages, saving progress as it goes;
- ``tab-then-extract``: open a tab, then read what it shows.

Each task is right when the page (or the answer) shows the work was done, checked from outside
the agent. A task is capped by ``--max-steps`` and ``--task-timeout`` (a run past it counts as
not done). Prints one line per task and a table: success, steps, model calls, seconds and
tokens per step; writes .bench/local_agent.json. The machine's load average is printed too:
on shared cores the seconds say as much about the neighbours as about the model.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from pydantic import BaseModel

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _local_bench import add_model_options, finish, markdown_table, open_model
from _server import StaticServer

from stagehand_py import AgentResult, Stagehand, StagehandError
from stagehand_py.llm import LLMClient


class Answer(BaseModel):
    answer: str


class Names(BaseModel):
    names: list[str]


Check = Callable[[Stagehand, AgentResult], Awaitable[tuple[bool, str]]]


@dataclass(frozen=True)
class Task:
    name: str
    page: str
    instruction: str
    check: Check
    output: type[BaseModel] | None = None
    variables: dict[str, str] | None = None


async def _page_text(sh: Stagehand) -> str:
    return str(await sh.page.evaluate("document.body ? document.body.innerText : ''"))


async def _check_login(sh: Stagehand, result: AgentResult) -> tuple[bool, str]:
    text = await _page_text(sh)
    return ("username=alice" in text and "password=s3cret-pw" in text), sh.page.url[-40:]


async def _check_page3_email(sh: Stagehand, result: AgentResult) -> tuple[bool, str]:
    answer = result.output.answer if isinstance(result.output, Answer) else str(result.output)
    return "hello@example.test" in answer, f"answer={answer[:60]!r}"


async def _check_all_parts(sh: Stagehand, result: AgentResult) -> tuple[bool, str]:
    names = [n.lower() for n in result.output.names] if isinstance(result.output, Names) else []
    wanted = ["anchor", "bolt", "cable", "drill", "epoxy", "file", "gasket", "hinge", "insulation",
              "jigsaw", "knob", "latch"]
    found = sum(any(w in n for n in names) for w in wanted)
    return found == len(wanted), f"{found}/{len(wanted)} parts"


async def _check_multi_field(sh: Stagehand, result: AgentResult) -> tuple[bool, str]:
    text = await _page_text(sh)
    ok = all(part in text for part in ("remember=yes", "plan=pro", "country=de"))
    return ok, text.replace("\n", " ")[:80]


async def _check_fruit(sh: Stagehand, result: AgentResult) -> tuple[bool, str]:
    selected = await sh.page.evaluate("document.querySelector('#fruit-cherry')?.getAttribute('aria-selected')")
    return selected == "true", f"cherry aria-selected={selected}"


async def _check_wizard(sh: Stagehand, result: AgentResult) -> tuple[bool, str]:
    text = await _page_text(sh)
    ok = "All done" in text and "Ada Lovelace" in text and "ada@example.test" in text and "plus" in text
    return ok, text.replace("\n", " ")[:80]


async def _check_checkpoint(sh: Stagehand, result: AgentResult) -> tuple[bool, str]:
    names = " ".join(result.output.names).lower() if isinstance(result.output, Names) else ""
    found = sum(w in names for w in ("anchor", "drill", "gasket"))
    saved = len(result.evidence.checkpoints)
    return found == 3 and saved >= 1, f"{found}/3 first parts, {saved} checkpoint(s)"


async def _check_billing(sh: Stagehand, result: AgentResult) -> tuple[bool, str]:
    answer = result.output.answer if isinstance(result.output, Answer) else str(result.output)
    return "billing settings" in answer.lower(), f"answer={answer[:60]!r}"


TASKS = [
    Task("login", "forms.html",
         "Sign in: type %user% as the username and %password% as the password, then press Sign in.",
         _check_login, variables={"user": "alice", "password": "s3cret-pw"}),
    Task("navigate-extract", "site/index.html",
         "Follow the Next link twice to reach Page 3, then report the e-mail address that page gives.",
         _check_page3_email, output=Answer),
    Task("paginate", "agent/list/1.html",
         "List the name of every part in the catalogue. It has 4 pages: use the Next page link.",
         _check_all_parts, output=Names),
    Task("multi-field", "forms.html",
         "Tick Remember me, choose the Pro plan, select Germany as the country, then press Sign in.",
         _check_multi_field),
    Task("custom-dropdown", "aria.html",
         "In the Favourite fruit dropdown, choose Cherry.", _check_fruit),
    Task("wizard", "wizard/step1.html",
         "Complete the wizard: name Ada Lovelace, e-mail ada@example.test, the Plus plan, accept the terms, "
         "and finish.", _check_wizard),
    Task("checkpoint", "agent/list/1.html",
         "Go through the first 3 pages of the parts catalogue and list the first part on each page. "
         "Save your progress after each page.", _check_checkpoint, output=Names),
    Task("tab-then-extract", "aria.html",
         "Open the Billing tab, then report the text its panel shows.", _check_billing, output=Answer),
]


@dataclass
class Outcome:
    task: str
    success: bool
    status: str
    steps: int
    calls: int
    seconds: float
    input_tokens: int
    output_tokens: int
    detail: str

    @property
    def seconds_per_step(self) -> float:
        return self.seconds / max(self.steps, 1)


async def run_task(sh: Stagehand, client: LLMClient, server: StaticServer, task: Task, *, max_steps: int,
                   task_timeout: float, folder: Path) -> Outcome:
    await sh.page.goto(server.url(task.page))
    before = client.metrics.total
    started = time.perf_counter()
    agent = sh.agent(allowed_domains=["127.0.0.1"], checkpoint_path=folder / f"{task.name}.json")
    status, steps, detail, success = "error", 0, "", False
    try:
        result = await agent.execute(task.instruction, max_steps=max_steps, output=task.output,
                                     variables=task.variables, timeout=task_timeout)
        status, steps = result.status, len(result.steps)
        success, detail = await task.check(sh, result)
        if not success:
            detail = f"{detail}; {result.message[:80]}"
    except StagehandError as exc:
        detail = f"{type(exc).__name__}: {str(exc)[:120]}"
    after = client.metrics.total
    return Outcome(task.name, success, status, steps, after.requests - before.requests,
                   time.perf_counter() - started, after.input_tokens - before.input_tokens,
                   after.output_tokens - before.output_tokens, detail)


def table(outcomes: list[Outcome]) -> str:
    rows: list[list[object]] = [
        [o.task, "yes" if o.success else "no", o.status, o.steps, o.calls, f"{o.seconds_per_step:.1f}",
         o.input_tokens // max(o.steps, 1), o.output_tokens // max(o.steps, 1)] for o in outcomes]
    steps = sum(o.steps for o in outcomes)
    per = max(steps, 1)
    rows.append(["**all**", f"**{sum(o.success for o in outcomes)}/{len(outcomes)}**", "", steps,
                 sum(o.calls for o in outcomes), f"{sum(o.seconds for o in outcomes) / per:.1f}",
                 sum(o.input_tokens for o in outcomes) // per, sum(o.output_tokens for o in outcomes) // per])
    return markdown_table(["task", "done", "status", "steps", "model calls", "s per step", "tokens in per step",
                           "tokens out per step"], rows)


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    add_model_options(parser)
    parser.add_argument("--max-steps", type=int, default=10, help="steps per task (a cap, to time-box the run)")
    parser.add_argument("--task-timeout", type=float, default=300.0, help="seconds per task")
    parser.add_argument("--only", nargs="*", default=None, help="task names to run (default: all)")
    parser.add_argument("--label", default="", help="a name for this run in the JSON file (e.g. baseline)")
    parser.add_argument("--out", type=Path, default=ROOT / ".bench" / "local_agent.json")
    args = parser.parse_args(argv)
    path, model = open_model(args)
    client = LLMClient(model)
    server = StaticServer().start()
    outcomes: list[Outcome] = []
    folder = Path(tempfile.mkdtemp(prefix="local-agent-bench-"))
    sh = await Stagehand.launch(model=client, token_budget=args.token_budget)
    try:
        for task in [t for t in TASKS if args.only is None or t.name in args.only]:
            outcome = await run_task(sh, client, server, task, max_steps=args.max_steps,
                                     task_timeout=args.task_timeout, folder=folder)
            outcomes.append(outcome)
            print(f"{task.name:17} {'done' if outcome.success else 'NOT DONE':8} {outcome.status:10} "
                  f"{outcome.steps:2} steps {outcome.calls:2} calls {outcome.seconds:6.0f} s  {outcome.detail}",
                  flush=True)
    finally:
        await sh.close()
        server.stop()
        await model.aclose()
    finish(table(outcomes), args.out, {"label": args.label, "model": str(path), "max_steps": args.max_steps,
                                       "task_timeout": args.task_timeout, "token_budget": args.token_budget,
                                       "outcomes": [asdict(o) for o in outcomes]})
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
