"""``stagehand-py replay <stored run | exported file>... [--check]``: replay recorded agent runs.

With ``--check`` no model is used at all (model requests are blocked, nothing heals): each step
prints ``replayed`` or ``drifted`` (the element it was recorded on and what the page shows at
that path now; for a data step, what the page shows instead of what the run read), then the
``outcome`` line: ``as recorded``, or each way the end state (kept URL, title, main heading) or
the output differs. The exit code is 1 when a step drifted or the outcome differs: the scheduled
"did the site change?" job. Without it, a drifted step heals with the configured model.

The input is a stored run (``<cache_dir>/agent-runs/run-*.json``) or a file written by
``AgentResult.to_script`` / ``to_pytest``, read back from its calls and the constants it pins
(never executed): a check deleted from the file is not made. Variable values come from
``STAGEHAND_VAR_<NAME>`` environment variables.

Several files run one after another in this one process, each on a browser of its own, each under
a ``== FILE`` line; the exit code is then the worst: 2 when a file could not be read or replayed,
else 1 when any drifted.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from .._cache import ElementIdentity
from .._errors import CacheError, InvalidArgumentError, StagehandError
from .._secrets import VariableSet
from .._stagehand import Stagehand
from .._types import Action, Variables
from ..agent._export import DATA_CONSTANT, END_CONSTANTS, VARIABLE_PREFIX
from ..agent._outcome import EndState
from ..agent._recording import RecordedStep, RunRecording, StepKind, load_recording
from ..agent._replay import replay_steps
from ..testing import block_model_requests

__all__ = ["add_replay_parser", "main"]


def add_replay_parser(commands: Any) -> None:
    """The ``replay`` subcommand, listed in the main parser's help."""
    replay = commands.add_parser("replay", help="replay a stored agent run or an exported test; --check reports drift")
    _arguments(replay)


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sources", metavar="source", nargs="+",
                        help="a stored run (agent-runs/run-*.json) or a file from to_script()/to_pytest(); several are checked in turn")
    parser.add_argument("--check", action="store_true", help="no model: report replayed/drifted per step; exit 1 on drift")
    parser.add_argument("--headed", action="store_true", help="show the browser")


def _literal(node: ast.AST | None) -> Any:
    return ast.literal_eval(node) if node is not None else None


def _keywords(call: ast.Call) -> dict[str, ast.AST]:
    return {k.arg: k.value for k in call.keywords if k.arg is not None}


def _calls_in_order(tree: ast.AST) -> list[ast.Call | ast.For]:
    nodes: list[ast.Call | ast.For] = [n for n in ast.walk(tree) if isinstance(n, ast.Call | ast.For)]
    return sorted(nodes, key=lambda n: (n.lineno, n.col_offset))


def _constants(tree: ast.Module) -> dict[str, Any]:
    """The file's module-level literals (``EXTRACTED_4 = {...}``, ``END_URL = '...'``)."""
    found: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                found[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:  # VARIABLES and the like: not a literal
                continue
    return found


_KIND_OF: dict[str, StepKind] = {prefix: kind for kind, prefix in DATA_CONSTANT.items()}
_END_OF = {constant: key for key, constant in END_CONSTANTS.items()}


def _pinned_end(node: ast.AST, constants: dict[str, Any], end: dict[str, str]) -> None:
    """``assert end.url == END_URL`` (a test) or ``end.differences(url=END_URL, ...)`` (a script)."""
    if isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) and node.comparators:
        right = node.comparators[0]
        if isinstance(right, ast.Name) and right.id in _END_OF and node.left.attr == _END_OF[right.id]:
            end[node.left.attr] = str(constants[right.id])
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "differences":
        for key, value in _keywords(node).items():
            if isinstance(value, ast.Name) and value.id in _END_OF:
                end[key] = str(constants[value.id])


def recording_from_file(path: Path) -> RunRecording:
    """The steps and pinned outcome of an exported file, read from its calls and constants (the
    file is parsed, never run)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError) as exc:
        raise CacheError(f"cannot read {path} as an exported agent run: {exc}") from exc
    constants = _constants(tree)
    steps: list[RecordedStep] = []
    start_url = ""
    names: set[str] = set()
    end: dict[str, str] = {}
    output: Any = None
    output_apart: list[str] = []
    for node in ast.walk(tree):
        _pinned_end(node, constants, end)
    for node in _calls_in_order(tree):
        if isinstance(node, ast.For) and isinstance(node.iter, ast.List):  # an extract check of an older export
            steps.append(RecordedStep(kind="extract", instruction="values shown", data=_literal(node.iter)))
            continue
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Name) and node.func.id == "_variable" and node.args:
            names.add(str(_literal(node.args[0])))
            continue
        if not isinstance(node.func, ast.Attribute):
            continue
        attr, args, kw = node.func.attr, node.args, _keywords(node)
        data = constants.get(args[-1].id) if args and isinstance(args[-1], ast.Name) else None
        apart = [str(p) for p in _literal(kw.get("apart")) or []]
        if attr == "goto" and args:
            url = str(_literal(args[0]))
            if start_url:
                steps.append(RecordedStep(kind="goto", url=url))
            else:
                start_url = url
        elif attr == "act" and args and isinstance(args[0], ast.Call):
            action = Action(**{k: _literal(v) for k, v in _keywords(args[0]).items()})
            element = kw.get("element")
            identity = ElementIdentity(**{k: _literal(v) for k, v in _keywords(element).items()}) \
                if isinstance(element, ast.Call) else None
            steps.append(RecordedStep(kind="act", action=action, role=identity.role if identity else None,
                                      name=identity.name if identity else None))
        elif attr == "not_shown" and isinstance(args[0], ast.Name) and args[0].id.split("_")[0] in _KIND_OF:
            kind = _KIND_OF[args[0].id.split("_")[0]]
            steps.append(RecordedStep(kind=kind, data=data, apart=apart))
        elif attr == "not_shown_on" and len(args) == 2:
            output, output_apart = data, apart
        elif attr == "press" and args:
            steps.append(RecordedStep(kind="press", keys=str(_literal(args[0]))))
        elif attr == "wheel" and len(args) == 2:
            steps.append(RecordedStep(kind="scroll", pixels=int(_literal(args[1]))))
        elif attr == "go_back":
            steps.append(RecordedStep(kind="back"))
    if not start_url:
        raise CacheError(f"{path} has no page.goto(...) to start from: it is not a file exported from an agent run.")
    pinned = EndState(**end) if end or output is not None else None
    return RunRecording(task=path.stem, start_url=start_url, variables=sorted(names), steps=steps, end=pinned,
                        output=output, output_apart=output_apart)


def _variables(names: list[str]) -> Variables:
    missing = [n for n in names if VARIABLE_PREFIX + n.upper() not in os.environ]
    if missing:
        raise InvalidArgumentError(
            "the run uses %" + "%, %".join(missing) + "%: set " + ", ".join(VARIABLE_PREFIX + n.upper() for n in missing)
            + " to their values.")
    return {n: os.environ[VARIABLE_PREFIX + n.upper()] for n in names}


async def _replay(recording: RunRecording, *, check: bool, headless: bool) -> int:
    variables = VariableSet.of(_variables(recording.variables))
    async with await Stagehand.launch(headless=headless, self_heal=not check) as sh:
        await sh.page.goto(recording.start_url, wait_until="load")
        if check:
            with block_model_requests():
                outcome = await replay_steps(sh, recording, variables=variables, heal=False)
        else:
            outcome = await replay_steps(sh, recording, variables=variables, heal=True)
    drifted = 0
    for step in outcome.report.steps:
        drifted += step.status == "drifted"
        detail = f"  ({step.detail})" if step.detail else ""
        print(f"step {step.index + 1:>3}  {step.status:<8}  {step.summary}{detail}")
    differences = outcome.report.outcome_differences
    if not outcome.complete:
        said = "not checked (a step could not run)"
    elif recording.end is None:
        said = "not recorded"
    else:
        said = "differs" if differences else "as recorded"
    print(f"outcome   {said}")
    for difference in differences:
        print(f"          - {difference}")
    healed = len(outcome.report.healed)
    print(f"{len(outcome.report.steps)} step(s): {len(outcome.report.replayed)} replayed, {healed} healed, "
          f"{drifted} drifted; outcome {said}; model calls: {outcome.report.model_calls}")
    return 1 if drifted or differences else 0


async def _replay_all(sources: list[Path], *, check: bool, headless: bool) -> int:
    codes = []
    for source in sources:
        if len(sources) > 1:
            print(f"== {source}", flush=True)
        try:
            recording = load_recording(source) if source.suffix == ".json" else recording_from_file(source)
            codes.append(await _replay(recording, check=check, headless=headless))
        except StagehandError as exc:
            print(f"error: {exc}", file=sys.stderr, flush=True)
            codes.append(2)
        sys.stdout.flush()
    if len(sources) > 1:  # the scheduled job's answer per file, from the same exit codes
        said = {0: "as recorded", 1: "drifted", 2: "error"}
        print("== each file:", *(f"{said[code]}: {source}" for code, source in zip(codes, sources, strict=True)), sep="\n")
    return max(codes)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="stagehand-py replay", description=__doc__.split("\n\n")[0])
    _arguments(parser)
    args = parser.parse_args(argv)
    return asyncio.run(_replay_all([Path(s) for s in args.sources], check=args.check, headless=not args.headed))
