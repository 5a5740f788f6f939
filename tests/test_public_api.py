"""The public surface is a promise: this pins it, as httpx does.

Adding a name is a decision (add it here too); removing or renaming one breaks users and needs a
reason in the changelog. ``__all__`` must stay a literal list so that editors, type checkers and
documentation tools can read it without importing the package.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import stagehand_py
from stagehand_py import _errors

PACKAGE = Path(stagehand_py.__file__).parent

#: Every class the exception tree's module defines: each must be a StagehandError and exported.
ERROR_NAMES = [name for name, value in vars(_errors).items()
               if isinstance(value, type) and value.__module__ == _errors.__name__ and not name.startswith("_")]

TOP_LEVEL = {
    "__version__",
    "Stagehand",
    "BrowserOptions",
    "ProxySettings",
    "Geolocation",
    "SavedDownload",
    "BlockedRequest",
    "ModelSpec",
    "StagehandOptions",
    "LLMOptions",
    "Snapshot",
    "SnapshotElement",
    "OutlineChunk",
    "Action",
    "ActionMethod",
    "ActResult",
    "Repair",
    "ExtractResult",
    "ExtractedValue",
    "ElementIdentity",
    "Variables",
    "VariableSpec",
    "Secret",
    "placeholders_in",
    "Agent",
    "AgentResult",
    "AgentStatus",
    "AgentStep",
    "AgentEvent",
    "EvaluateResult",
    "Expectation",
    "DomConfidence",
    "measure_dom_confidence",
    "LOW_CONFIDENCE",
    *ERROR_NAMES,
}

#: Public modules besides the top level: each has a literal ``__all__`` whose names all resolve.
PUBLIC_MODULES = ["stagehand_py", "stagehand_py.llm", "stagehand_py.testing", "stagehand_py.agent", "stagehand_py.sync_api",
                  "stagehand_py.tracing", "stagehand_py.mcp", "stagehand_py.browser"]


def test_top_level_exports_exactly_the_pinned_names() -> None:
    assert set(stagehand_py.__all__) == TOP_LEVEL
    assert len(stagehand_py.__all__) == len(set(stagehand_py.__all__)), "a name is listed twice"


def test_every_error_class_is_exported_and_derives_from_the_root() -> None:
    assert len(ERROR_NAMES) >= 30, ERROR_NAMES  # control: the classes were found
    for name in ERROR_NAMES:
        cls = getattr(stagehand_py, name)
        assert isinstance(cls, type) and issubclass(cls, stagehand_py.StagehandError), name


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_all_is_a_literal_list_of_resolvable_names(module_name: str) -> None:
    module = importlib.import_module(module_name)
    source = Path(module.__file__ or "").read_text(encoding="utf-8")
    literal: list[str] | None = None
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            assert isinstance(node.value, ast.List), f"{module_name}.__all__ is not a literal list"
            assert all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.value.elts), (
                f"{module_name}.__all__ holds something other than string literals"
            )
            literal = [e.value for e in node.value.elts]  # type: ignore[attr-defined]
    assert literal is not None, f"{module_name} has no __all__"
    assert literal == list(module.__all__)
    missing = [name for name in literal if not hasattr(module, name)]
    assert not missing, f"{module_name}.__all__ names what the module does not define: {missing}"


def test_the_control_a_computed_all_is_caught(tmp_path: Path) -> None:
    # Control: the literal-list check really rejects the pattern the package used to have.
    source = "from x import __all__ as _names\n__all__ = ['A', *_names]\n"
    node = ast.parse(source).body[1]
    assert isinstance(node, ast.Assign) and isinstance(node.value, ast.List)
    assert not all(isinstance(e, ast.Constant) for e in node.value.elts)


#: The packages users may import from; every other package's name starts with an underscore.
#: (``pytest_plugin`` is the plugin's entry point, a package whose private parts are its ``_`` modules.)
PUBLIC_PACKAGES = {"agent", "batch", "llm", "snapshot", "testing", "browser", "tracing", "mcp", "pytest_plugin"}


def test_internal_packages_are_behind_underscores() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    exposed = sorted(name for name in packages - PUBLIC_PACKAGES if not name.startswith("_"))
    assert not exposed, f"packages importable as if public: {exposed}; rename them with a leading underscore"
