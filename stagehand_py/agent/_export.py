"""A recorded agent run as a readable Python file on the public API: a script, or a pytest test.

Each act becomes ``await sh.act(Action(...), variables=VARIABLES, element=ElementIdentity(...))``:
the Stagehand checks the element is still the one recorded before acting, and heals it (one
model call) or refuses when it is not. Arguments keep their ``%placeholders%``; the values come
from environment variables (``STAGEHAND_VAR_<NAME>``) when the file runs, never from the file.
An extract becomes ``extract(instruction, schema=<a pydantic model made from its schema>)`` in a
script; in a test it checks, with no model, that the page still shows the values the run read.
The file type-checks under ``mypy --strict``.
"""

from __future__ import annotations

import keyword
import os
import re
from pathlib import Path
from typing import Any

from .._util import write_bytes_atomic
from ._recording import RecordedStep, RunRecording
from ._replay import leaves

__all__ = ["script_text", "write_script"]

#: Prefix of the environment variable that gives a variable's value to an exported file.
VARIABLE_PREFIX = "STAGEHAND_VAR_"

_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


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


def _act(step: RecordedStep, sh: str, has_variables: bool) -> list[str]:
    action = step.action
    assert action is not None  # an act step always carries its action
    fields = [f"selector={action.selector!r}", f"method={action.method!r}"]
    if action.arguments:
        fields.append(f"arguments={list(action.arguments)!r}")
    if action.description:
        fields.append(f"description={action.description!r}")
    options = ["variables=VARIABLES"] if has_variables else []
    if step.role is not None and step.name is not None:
        options.append(f"element=ElementIdentity(role={step.role!r}, name={step.name!r})")
    return [f"    await {sh}.act(", f"        Action({', '.join(fields)}),",
            *(f"        {o}," for o in options), "    )"]


def script_text(recording: RunRecording, *, test: bool) -> str:
    """The Python source of ``recording`` as a script (``test=False``) or a pytest test."""
    models = _Models()
    sh = "stagehand" if test else "sh"
    body: list[str] = []
    uses_any = False
    for n, step in enumerate(recording.steps, start=1):
        body.append(f"    # step {n}: {step.summary()}".replace("\n", " "))
        if step.kind == "goto":
            body.append(f"    await {sh}.page.goto({step.url!r})")
        elif step.kind == "back":
            body.append(f"    await {sh}.page.go_back()")
        elif step.kind == "press":
            body.append(f"    await {sh}.page.keyboard.press({step.keys!r})")
        elif step.kind == "scroll":
            body.append(f"    await {sh}.page.mouse.wheel(0, {step.pixels})")
        elif step.kind == "act":
            body.extend(_act(step, sh, bool(recording.variables)))
        elif test:
            values = [v for v in dict.fromkeys(leaves(step.data)) if v.strip() and "%" not in v]
            body.append(f"    shown = str((await {sh}.extract())['page_text']).lower()  # the outline; no model call")
            body.append(f"    for value in {values!r}:")
            body.append(f"        assert value.lower() in shown, f'step {n}: the page no longer shows {{value!r}}'")
        else:
            if step.schema_ is not None:
                schema_type = models.type_of(step.schema_, f"Extract{n}")
                if schema_type in models._names:
                    body.append(f"    data_{n} = await {sh}.extract({step.instruction!r}, schema={schema_type})")
                else:
                    uses_any = True
                    body.append(f"    data_{n}: Any = await {sh}.extract({step.instruction!r}, {step.schema_!r})")
            else:
                body.append(f"    data_{n} = await {sh}.extract({step.instruction!r})")
            body.append(f"    print(data_{n})")
    uses_any = uses_any or any("Any" in c for c in models.classes)
    return _assemble(recording, body, models, test=test, uses_any=uses_any)


def _assemble(recording: RunRecording, body: list[str], models: _Models, *, test: bool, uses_any: bool) -> str:
    names = recording.variables
    doc = recording.task.replace("\\", "\\\\").replace('"""', "'''")
    how = ("pytest this file (with the stagehand_py plugin): no model is called while nothing drifted; a drifted "
           "step heals with one model call, recorded to the plugin's cassette with --stagehand-record once."
           if test else "python this file: every act checks its element before acting.")
    env = ", ".join(VARIABLE_PREFIX + n.upper() for n in names)
    head = [f'"""Exported from a stagehand_py agent run: {doc}', "", how]
    if names:
        head.append(f"Variable values come from the environment: {env}.")
    head += ['"""', "", "from __future__ import annotations", ""]
    imports = ["import asyncio"] if not test else []
    if names:
        imports.append("import os")
    if uses_any:
        imports.append("from typing import Any")
    head += sorted(imports) + ([""] if imports else [])
    if test:
        head += ["import pytest"]
    if models.classes:
        fields = "BaseModel, Field" if any("Field(" in c for c in models.classes) else "BaseModel"
        head += [f"from pydantic import {fields}"]
    public = ["Stagehand"]
    if any(line.strip().startswith("Action(") for line in body):
        public += ["Action", "ElementIdentity"]
    if names:
        public.append("Variables")
    head += ["", f"from stagehand_py import {', '.join(sorted(public))}", "", ""]
    for source in models.classes:
        head += [source, "", ""]
    if names:
        head += ["def _variable(name: str) -> str:",
                 f"    value = os.environ.get({VARIABLE_PREFIX!r} + name.upper())",
                 "    if value is None:",
                 f"        raise SystemExit(f'set {VARIABLE_PREFIX}{{name.upper()}} to the value of %{{name}}%')",
                 "    return value", "", "",
                 "VARIABLES: Variables = {" + ", ".join(f"{n!r}: _variable({n!r})" for n in names) + "}", "", ""]
    slug = re.sub(r"\W+", "_", recording.task.lower()).strip("_")[:60] or "run"
    if test:
        marker = "@pytest.mark.stagehand(variables=VARIABLES)\n" if names else ""
        head += [f"{marker}async def test_{slug}(stagehand: Stagehand) -> None:",
                 f"    await stagehand.page.goto({recording.start_url!r})", *body]
    else:
        head += ["async def run(sh: Stagehand) -> None:", f"    await sh.page.goto({recording.start_url!r})", *body,
                 "", "", "async def main() -> None:", "    async with await Stagehand.launch() as sh:",
                 "        await run(sh)", "", "", 'if __name__ == "__main__":', "    asyncio.run(main())"]
    return "\n".join(head) + "\n"


def write_script(recording: RunRecording, path: str | os.PathLike[str], *, test: bool) -> Path:
    target = Path(path)
    write_bytes_atomic(target, script_text(recording, test=test).encode("utf-8"))
    return target
