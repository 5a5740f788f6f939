"""A recorded agent run as a readable Python file on the public API: a script, or a pytest test.

Each act becomes ``await sh.act(Action(...), variables=VARIABLES, element=ElementIdentity(...))``:
the Stagehand checks the element is still the one recorded before acting, and heals it (one
model call) or refuses when it is not. Arguments keep their ``%placeholders%``; the values come
from environment variables (``STAGEHAND_VAR_<NAME>``) when the file runs, never from the file.

Then the outcome, with no model (:class:`~._outcome.PageView`): at each extract and
``save_progress`` the page must still show what the run read, compared as data; at the end, the
kept URL, the title and the main heading the run ended on, and the run's output on the pages read.
A test asserts each (a comment says what it pins, a failure what the page shows); a script
returns the differences (empty: as recorded) and prints them. ``expect_done=True`` adds the run's
``done`` message as an ``expect`` claim (the plugin's cassette keeps the verdict). A test carries
its own ``pytest.mark.asyncio(loop_scope="session")``, so it runs with no pytest configuration.
The file type-checks under ``mypy --strict``.
"""

from __future__ import annotations

import keyword
import os
import pprint
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._util import write_bytes_atomic
from ._outcome import has_values, prune, rows_in, url_keys
from ._recording import RecordedStep, RunRecording, StepKind

__all__ = ["script_text", "write_script"]

#: Prefix of the environment variable that gives a variable's value to an exported file.
VARIABLE_PREFIX = "STAGEHAND_VAR_"
#: Names of the constants a file pins; ``stagehand-py replay FILE`` reads them back.
DATA_CONSTANT: dict[StepKind, str] = {"extract": "EXTRACTED", "save_progress": "SAVED"}
END_CONSTANTS = {"url": "END_URL", "title": "END_TITLE", "heading": "END_HEADING"}

_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
#: How a failed check lists what differs: one difference a line.
_EACH = '"".join("\\n  - " + d for d in missing)'


class _Models:
    """Pydantic model source for the JSON Schemas of a run's extracts, one class per object."""

    def __init__(self) -> None:
        self.classes: list[str] = []
        self._names: set[str] = set()

    def _name(self, wanted: str) -> str:
        base = re.sub(r"\W+", "", wanted.title()) or "Data"
        name, n = base, 2
        while name in self._names:
            name, n = f"{base}{n}", n + 1
        self._names.add(name)
        return name

    def type_of(self, schema: Any, hint: str) -> str:
        if not isinstance(schema, dict):
            return "Any"
        kind = schema.get("type")
        if isinstance(kind, list):
            kinds = [self.type_of({**schema, "type": k}, hint) for k in kind]
            return " | ".join(dict.fromkeys(kinds))
        if "anyOf" in schema and isinstance(schema["anyOf"], list):
            return " | ".join(dict.fromkeys(self.type_of(s, hint) for s in schema["anyOf"]))
        if kind == "array":
            return f"list[{self.type_of(schema.get('items'), hint + 'Item')}]"
        if kind == "object" or "properties" in schema:
            properties = schema.get("properties")
            if not isinstance(properties, dict) or not properties:
                return "dict[str, Any]"
            return self.model(schema, hint)
        return _SCALARS.get(str(kind), "Any")

    def model(self, schema: dict[str, Any], hint: str) -> str:
        name = self._name(str(schema.get("title") or hint))
        required = set(schema.get("required") or [])
        lines = [f"class {name}(BaseModel):"]
        for n, (field, sub) in enumerate(dict(schema.get("properties") or {}).items()):
            annotation = self.type_of(sub, f"{name}{str(field).title()}")
            attr = str(field) if str(field).isidentifier() and not keyword.iskeyword(str(field)) else f"field_{n}"
            options = [] if attr == field else [f"alias={field!r}"]
            if field not in required:
                annotation = annotation if "None" in annotation.split(" | ") else f"{annotation} | None"
                options.insert(0, "default=None")
            value = f" = Field({', '.join(options)})" if options else ""
            lines.append(f"    {attr}: {annotation}{value}")
        if len(lines) == 1:
            lines.append("    pass")
        self.classes.append("\n".join(lines))
        return name


@dataclass(frozen=True)
class _Form:
    """What kind of file is written: a script, an async test or a sync test."""

    test: bool
    sync: bool
    variables: bool

    @property
    def sh(self) -> str:
        return ("stagehand_sync" if self.sync else "stagehand") if self.test else "sh"

    @property
    def wait(self) -> str:
        return "" if self.sync else "await "

    @property
    def read(self) -> str:
        """The expression that reads the page with no model."""
        method = "read_sync" if self.sync else "read"
        return f"{self.wait}PageView.{method}({self.sh}{', variables=VARIABLES' if self.variables else ''})"

    def check(self, found: str, message: str) -> list[str]:
        """``found`` (a list of differences): a test asserts it is empty; a script adds it to what it returns."""
        return [f"    missing = {found}", f"    assert not missing, {message}"] if self.test else [f"    differences += {found}"]


def _act(step: RecordedStep, form: _Form) -> list[str]:
    action = step.action
    assert action is not None  # an act step always carries its action
    fields = [f"selector={action.selector!r}", f"method={action.method!r}"]
    if action.arguments:
        fields.append(f"arguments={list(action.arguments)!r}")
    if action.description:
        fields.append(f"description={action.description!r}")
    options = ["variables=VARIABLES"] if form.variables else []
    if step.role is not None and step.name is not None:
        options.append(f"element=ElementIdentity(role={step.role!r}, name={step.name!r})")
    return [f"    {form.wait}{form.sh}.act(", f"        Action({', '.join(fields)}),",
            *(f"        {o}," for o in options), "    )"]


def _what_it_pins(data: Any, apart: list[str]) -> str:
    rows = rows_in(data, apart)
    together = f", the values of each of its {rows} row(s) or item(s) together" if rows else ""
    return f"every value still shown{together}"


def _data_step(step: RecordedStep, n: int, form: _Form, models: _Models, constants: list[str],
               *, read: bool) -> tuple[list[str], bool]:
    """The lines of an extract or save_progress step (``read``: the page changed since it was last
    read); True when the script's extract needs ``Any``."""
    body: list[str] = []
    uses_any = False
    if step.kind == "extract" and not form.test:  # a script extracts again, for its user
        if step.schema_ is not None:
            schema_type = models.type_of(step.schema_, f"Extract{n}")
            if schema_type in models._names:
                body.append(f"    data_{n} = {form.wait}{form.sh}.extract({step.instruction!r}, schema={schema_type})")
            else:
                uses_any = True
                body.append(f"    data_{n}: Any = {form.wait}{form.sh}.extract({step.instruction!r}, {step.schema_!r})")
        else:
            body.append(f"    data_{n} = {form.wait}{form.sh}.extract({step.instruction!r})")
        body.append(f"    print(data_{n})")
    pinned = step.pinned
    if step.unshown:
        body.append(f"    # not pinned (the page did not show them as written when the run read them): {', '.join(step.unshown)}")
    if not has_values(pinned):
        body.append(f"    # nothing step {n} read is pinned")
        return body, uses_any
    name = f"{DATA_CONSTANT[step.kind]}_{n}"
    constants.append(f"{name} = {_literal(pinned)}")
    apart = f", apart={step.apart!r}" if step.apart else ""
    if read:
        body += [f"    page = {form.read}  # the page as text, read with no model", "    pages.append(page)"]
    body += [f"    # pins what step {n} read, compared as data: {_what_it_pins(pinned, step.apart)}",
             *form.check(f"page.not_shown({name}{apart})", f'f"step {n} read other data than the page shows now at {{page.url}} (titled {{page.title!r}}):" + {_EACH}')]
    return body, uses_any


def _literal(value: Any) -> str:
    return pprint.pformat(value, width=110, sort_dicts=False)


_END_SAYS = {"url": "the final URL: scheme, host, path{keys}\n    #   (session ids, cache busters and other volatile parts "
                    "are left out by rule)",
             "title": "the final page title", "heading": "the main heading (the first h1, else the first heading)"}
_END_FAILS = {"url": 'f"the run ended at {END_URL!r}; the page is at {end.url!r}"',
              "title": 'f"the run ended on the title {END_TITLE!r}; the page\'s title is {end.title!r}"',
              "heading": 'f"the run ended on the heading {END_HEADING!r}; the page shows {end.heading!r}"'}


def _outcome(recording: RunRecording, form: _Form, constants: list[str], *, reads_pages: bool, expect_done: bool) -> list[str]:
    end = recording.end
    body = ["", "    # -- the outcome, read with no model: delete a line to loosen the check, add one to tighten it",
            "    #    (docs/guides/replay.md says what each line pins and how)"]
    if end is None:
        return [*body, "    # the run's end state was not recorded: nothing pinned"]
    body.append(f"    end = {form.read}")
    pinned = {k: v for k, v in (("url", end.url), ("title", end.title), ("heading", end.heading)) if v}
    for key in ("url", "title", "heading"):
        if key not in pinned:
            body.append(f"    # the page had no {key} when the run ended: not pinned")
            continue
        constants.append(f"{END_CONSTANTS[key]} = {pinned[key]!r}")
        keys = url_keys(str(pinned[key]))
        says = _END_SAYS[key].format(keys=f" and the query key(s) {', '.join(keys)}" if keys else " (no query kept)")
        body.append(f"    # pins {says}")
        if form.test:
            body.append(f"    assert end.{key} == {END_CONSTANTS[key]}, {_END_FAILS[key]}")
    if pinned and not form.test:  # one call for the three
        body.append("    differences += end.differences(" + ", ".join(f"{k}={END_CONSTANTS[k]}" for k in pinned) + ")")
    output = prune(recording.output, recording.output_unshown) if recording.output is not None else None
    if output is not None and has_values(output):
        constants.append(f"OUTPUT = {_literal(output)}")
        if recording.output_unshown:
            body.append("    # not pinned (no page the run read showed them as written): "
                        + ", ".join(f"output{'' if p.startswith('[') else '.'}{p}" for p in recording.output_unshown))
        apart = f", apart={recording.output_apart!r}" if recording.output_apart else ""
        body += [f"    # pins the run's output (its done data), compared as data on the pages read: "
                 f"{_what_it_pins(output, recording.output_apart)}",
                 *form.check(f"PageView.not_shown_on({'[*pages, end]' if reads_pages else '[end]'}, OUTPUT{apart})",
                             f'"the run\'s output is not what the pages show:" + {_EACH}')]
    if expect_done and recording.message:
        body += ["    # the run's own claim (its done message), judged by the model: record the verdict once with",
                 "    # --stagehand-record once; it then replays from this test's cassette with no model",
                 f"    {form.wait}{form.sh}.expect({recording.message!r})"]
    return body


def script_text(recording: RunRecording, *, test: bool, sync: bool = False, expect_done: bool = False) -> str:
    """The Python source of ``recording`` as a script (``test=False``) or a pytest test (async,
    or on the ``stagehand_sync`` fixture with ``sync=True``)."""
    form = _Form(test=test, sync=sync and test, variables=bool(recording.variables))
    models = _Models()
    constants: list[str] = []
    body: list[str] = []
    uses_any = False
    unread = True  # a browser step since the page was last read
    for n, step in enumerate(recording.steps, start=1):
        body.append(f"    # step {n}: {step.summary()}".replace("\n", " "))
        if step.kind == "goto":
            body.append(f"    {form.wait}{form.sh}.page.goto({step.url!r})")
        elif step.kind == "back":
            body.append(f"    {form.wait}{form.sh}.page.go_back()")
        elif step.kind == "press":
            body.append(f"    {form.wait}{form.sh}.page.keyboard.press({step.keys!r})")
        elif step.kind == "scroll":
            body.append(f"    {form.wait}{form.sh}.page.mouse.wheel(0, {step.pixels})")
        elif step.kind == "act":
            body.extend(_act(step, form))
        else:
            lines, needs_any = _data_step(step, n, form, models, constants, read=unread)
            body.extend(lines)
            uses_any = uses_any or needs_any
            unread = unread and not any(line.startswith("    page = ") for line in lines)
            continue
        unread = True
    reads_pages = any(line == "    pages.append(page)" for line in body)
    body += _outcome(recording, form, constants, reads_pages=reads_pages, expect_done=expect_done and test)
    if reads_pages:
        body.insert(0, "    pages: list[PageView] = []  # the pages read at the data steps, for the output's check")
    uses_any = uses_any or any("Any" in c for c in models.classes)
    return _assemble(recording, body, constants, models, form, uses_any=uses_any)


def _head(recording: RunRecording, form: _Form, uses_any: bool, models: _Models, body: list[str]) -> list[str]:
    names = recording.variables
    doc = recording.task.replace("\\", "\\\\").replace('"""', "'''")
    if form.test:
        needs = "stagehand_py and pytest" if form.sync else "stagehand_py, pytest and pytest-asyncio (>= 0.24)"
        how = [f"pytest this file: it needs {needs} installed and no pytest configuration.",
               "No model is called while nothing drifted; a drifted step heals with one model call,",
               "recorded to the plugin's cassette with --stagehand-record once. Then it checks the outcome the run",
               "reached, with no model: the data it read and where it ended."]
    else:
        how = ["python this file: every act checks its element before acting; then the outcome is compared with",
               "the recorded run's (printed; the exit status is 1 when it differs)."]
    head = [f'"""Exported from a stagehand_py agent run: {doc}', "", *how]
    if names:
        head.append("Variable values come from the environment: "
                    + ", ".join(VARIABLE_PREFIX + n.upper() for n in names) + ".")
    head += ['"""', "", "from __future__ import annotations", ""]
    imports = ["import asyncio"] if not form.test else []
    if names:
        imports.append("import os")
    if uses_any:
        imports.append("from typing import Any")
    head += sorted(imports) + ([""] if imports else [])
    if form.test:
        head += ["import pytest"]
    if models.classes:
        fields = "BaseModel, Field" if any("Field(" in c for c in models.classes) else "BaseModel"
        head += [f"from pydantic import {fields}"]
    public = [] if form.sync else ["Stagehand"]
    if any(line.strip().startswith("Action(") for line in body):
        public += ["Action", "ElementIdentity"]
    if names:
        public.append("Variables")
    head += [""]
    if public:
        head.append(f"from stagehand_py import {', '.join(sorted(public))}")
    head.append("from stagehand_py.agent import PageView")
    if form.sync:
        head.append("from stagehand_py.sync_api import Stagehand")
    return [*head, "", ""]


def _assemble(recording: RunRecording, body: list[str], constants: list[str], models: _Models, form: _Form,
              *, uses_any: bool) -> str:
    names = recording.variables
    head = _head(recording, form, uses_any, models, body)
    for source in models.classes:
        head += [source, "", ""]
    if names:
        head += ["def _variable(name: str) -> str:",
                 f"    value = os.environ.get({VARIABLE_PREFIX!r} + name.upper())",
                 "    if value is None:",
                 f"        raise SystemExit(f'set {VARIABLE_PREFIX}{{name.upper()}} to the value of %{{name}}%')",
                 "    return value", "", "",
                 "VARIABLES: Variables = {" + ", ".join(f"{n!r}: _variable({n!r})" for n in names) + "}", ""]
    if constants:
        head += ["# What the run read and where it ended, as the pages showed it (a variable's value as %name%).",
                 *constants, ""]
    head += [""]
    slug = re.sub(r"\W+", "_", recording.task.lower()).strip("_")[:60] or "run"
    start = f"    {form.wait}{form.sh}.page.goto({recording.start_url!r})"
    if form.test:
        marks = [] if form.sync else ['@pytest.mark.asyncio(loop_scope="session")  # the plugin\'s fixtures run on '
                                      "the session loop; no pytest configuration needed"]
        if names:
            marks.append("@pytest.mark.stagehand(variables=VARIABLES)")
        signature = f"def test_{slug}({form.sh}: Stagehand) -> None:"
        head += [*marks, signature if form.sync else f"async {signature}", *body[:_preamble(body)], start,
                 *body[_preamble(body):]]
    else:
        head += ["async def run(sh: Stagehand) -> list[str]:",
                 '    """Run the recorded steps; return how the outcome differs from the recorded run (empty: as recorded)."""',
                 "    differences: list[str] = []", *body[:_preamble(body)], start, *body[_preamble(body):],
                 "    return differences", "", "",
                 "async def main() -> None:", "    async with await Stagehand.launch() as sh:",
                 "        differences = await run(sh)", '    print("outcome as recorded:", not differences)',
                 "    for difference in differences:", '        print("  -", difference)', "    if differences:",
                 "        raise SystemExit(1)", "", "", 'if __name__ == "__main__":', "    asyncio.run(main())"]
    return "\n".join(head) + "\n"


def _preamble(body: list[str]) -> int:
    """How many leading body lines go before the first navigation (the ``pages`` list)."""
    return 1 if body and body[0].startswith("    pages: ") else 0


def write_script(recording: RunRecording, path: str | os.PathLike[str], *, test: bool, sync: bool = False,
                 expect_done: bool = False) -> Path:
    target = Path(path)
    write_bytes_atomic(target, script_text(recording, test=test, sync=sync, expect_done=expect_done).encode("utf-8"))
    return target
