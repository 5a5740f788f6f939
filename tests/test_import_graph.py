"""No module imports its own caller: the package's import graph has no cycle.

Every import counts, function-level ones included (a deferred import still ties the two modules
together); only `if TYPE_CHECKING:` blocks are left out. A cycle found is printed module by
module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import stagehand_py

PACKAGE = Path(stagehand_py.__file__).parent


def module_names() -> dict[str, Path]:
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def imports_of(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found: set[str] = set()

    class Visitor(ast.NodeVisitor):
        def visit_If(self, node: ast.If) -> None:
            test = node.test
            if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
            ):
                for statement in node.orelse:
                    self.visit(statement)
                return
            self.generic_visit(node)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            for target in (name, *(f"{name}.{alias.name}" for alias in node.names)):
                if target in known and target != module:
                    found.add(target)

        def visit_Import(self, node: ast.Import) -> None:
            found.update(alias.name for alias in node.names if alias.name in known and alias.name != module)

    Visitor().visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_package_import_graph_has_no_cycle() -> None:
    known = module_names()
    graph = {module: imports_of(module, path, known) for module, path in known.items()}
    found = cycles(graph)
    assert found == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_agent_does_not_import_stagehand() -> None:
    """The agent talks to the Driver protocol; Stagehand builds agents, never the other way."""
    known = module_names()
    agent = {m: p for m, p in known.items() if m.startswith("stagehand_py.agent")}
    importers = sorted(m for m, p in agent.items() if "stagehand_py._stagehand" in imports_of(m, p, known))
    assert importers == []


def test_the_control_a_cycle_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
