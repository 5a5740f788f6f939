"""The docs site: every fenced block either runs here (against scripted models and local
sites) or is explicitly marked, and ``mkdocs build --strict`` passes.

A block's marker is an HTML comment on the line before it (invisible in the site):
``<!-- docs-test: skip (reason) -->``, ``<!-- docs-test: scenario NAME -->`` (run by the
function NAME below, which calls the block's ``main``), ``<!-- docs-test: taskspec -->`` (a
batch task spec, validated), or ``<!-- docs-test: run (...) -->`` / no marker for a python
block that runs as a script (``__name__ == "__main__"``) with real model requests blocked.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import subprocess
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from stagehand_py.batch import TaskSpec
from stagehand_py.testing import FunctionLLM

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)
_MARKER = re.compile(r"<!-- docs-test: (\w+)\s*(.*?)\s*-->\s*$")


@dataclass
class Block:
    page: str
    line: int
    lang: str
    code: str
    kind: str  # run | skip | scenario | taskspec | text
    arg: str

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def blocks() -> list[Block]:
    found = []
    # The README's blocks are held to the same rule as the site's.
    for path in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for m in _FENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            marker = _MARKER.search(before)
            lang = m.group(1)
            kind, arg = (marker.group(1), marker.group(2)) if marker else (("run", "") if lang == "python" else ("text", ""))
            page = str(path.relative_to(DOCS)) if path.is_relative_to(DOCS) else "../" + path.name
            found.append(Block(page, line, lang, m.group(2), kind, arg))
    return found


ALL = blocks()


def test_every_block_is_run_or_explicitly_marked() -> None:
    assert len(ALL) >= 15
    for block in ALL:
        assert block.kind in {"run", "skip", "scenario", "taskspec", "text"}, block.id
        if block.kind == "skip":
            assert re.fullmatch(r"\(.{10,}\)", block.arg), f"{block.id}: a skipped block needs a reason in parentheses"
        if block.kind == "text":
            assert block.lang in {"text", ""}, f"{block.id}: a {block.lang} block must run or carry a docs-test marker"
        if block.kind == "scenario":
            assert block.arg in SCENARIOS, f"{block.id}: no scenario {block.arg!r}"
    used = {b.arg for b in ALL if b.kind == "scenario"}
    assert used == set(SCENARIOS), "every scenario is used by a block"


@pytest.fixture
def docs_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # Clients may be constructed (keys present) but no request may leave.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-docs-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-docs-test")
    monkeypatch.setenv("STAGEHAND_BLOCK_MODEL_REQUESTS", "1")


def _module(block: Block, name: str = "docs_block", *, seed: list[Block] = (),
            module: types.ModuleType | None = None) -> dict[str, Any]:
    """Run ``block`` as module ``name`` (registered in sys.modules, so pydantic can resolve
    the classes it defines), after the ``seed`` blocks of the same page, like a reader would;
    in ``module`` when given (where the page's earlier blocks already ran)."""
    if module is None:
        module = types.ModuleType(name)
        module.__file__ = str(DOCS / block.page)
    previous = sys.modules.get(name)
    sys.modules[name] = module
    try:
        for part in (*seed, block):
            exec(compile(part.code, f"{part.page}:{part.line}", "exec"), module.__dict__)
    finally:
        if previous is not None:
            sys.modules[name] = previous
        else:
            sys.modules.pop(name, None)
    return module.__dict__


#: Per page, the last block run here and the module it ran in: the page's next block runs on
#: in it, as a reader's session goes on, instead of running every earlier block again.
_PAGE_SO_FAR: dict[str, tuple[int, types.ModuleType]] = {}


@pytest.mark.parametrize("block", [b for b in ALL if b.kind == "run"], ids=lambda b: b.id)
def test_script_blocks_run(block: Block, docs_env: None, capsys: pytest.CaptureFixture[str]) -> None:
    earlier = [b for b in ALL if b.kind == "run" and b.page == block.page and b.line < block.line]
    so_far = _PAGE_SO_FAR.pop(block.page, None)
    if earlier and so_far is not None and so_far[0] == earlier[-1].line:
        # Every earlier block ran, in order, in this module (each in its own test, which passed).
        module, seed = so_far[1], []
    else:  # run alone (or after a failed block): the earlier blocks first, then this one
        module, seed = types.ModuleType("__main__"), earlier
        module.__file__ = str(DOCS / block.page)
    _module(block, "__main__", seed=seed, module=module)
    _PAGE_SO_FAR[block.page] = (block.line, module)


@pytest.mark.parametrize("block", [b for b in ALL if b.kind == "taskspec"], ids=lambda b: b.id)
def test_task_spec_blocks_are_valid(block: Block) -> None:
    spec = TaskSpec.model_validate(json.loads(block.code))
    assert spec.discovery is not None and spec.required_fields


# --- scenarios: the guides' programs against local sites and scripted models ----------------


def _example_helpers() -> tuple[Any, Any]:
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from _local_site import serve_site
    finally:
        sys.path.remove(str(ROOT / "examples"))
    from test_examples import _answer  # the scripted model of tests/test_examples.py

    return serve_site, _answer


def login(block: Block, tmp_path: Path) -> None:
    serve_site, answer = _example_helpers()
    prompts: list[str] = []

    def model(request: Any) -> Any:
        prompts.append(json.dumps([m.model_dump(mode="json") for m in request.messages]))
        return answer(request)

    with serve_site() as site:
        status = asyncio.run(_module(block)["main"](site.url("login.html"), model=FunctionLLM(model), password="pw-canary-19"))
    assert status == "Signed in as ada."
    assert prompts and not any("pw-canary-19" in p for p in prompts)


def links(block: Block, tmp_path: Path) -> None:
    serve_site, answer = _example_helpers()
    with serve_site() as site:
        catalog = asyncio.run(_module(block)["main"](site.url("products.html"), model=FunctionLLM(answer)))
        assert [str(p.url) for p in catalog.products] == [site.url("products/1.html"), site.url("products/2.html")]


def pytest_flow(block: Block, tmp_path: Path) -> None:
    (tmp_path / "test_flow.py").write_text(block.code)
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = session\nasyncio_default_test_loop_scope = session\n"
    )
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:playwright"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0 and "2 passed" in proc.stdout, proc.stdout + proc.stderr


def batch(block: Block, tmp_path: Path) -> None:
    serve_site, _ = _example_helpers()
    with serve_site() as site:
        counts = asyncio.run(_module(block)["main"]([site.url("index.html"), site.url("products.html")], tmp_path))
    assert counts == {"done": 2, "unverified": 0, "partial_success": 0, "failed": 0, "needs_review": 0}
    assert (tmp_path / "run_1" / "combined.csv").exists() and (tmp_path / "run_1" / "page2" / "001_page.png").exists()


def long_horizon(block: Block, tmp_path: Path) -> None:
    from agent._script import AgentScript, Seen, call  # the scripted agent model of tests/agent

    def save(s: Seen) -> dict[str, Any]:
        names = [line.split("StaticText: ", 1)[1] for line in s.outline.splitlines() if "StaticText: " in line]
        return call("save_progress", data={"items": [n for n in names if not n.startswith(("$", "Page ", "Last page"))]})

    steps: list[Any] = []
    for _ in range(3):
        steps += [save, lambda s: call("act", element_id=s.id("link", "Next page"))]
    steps += [save, lambda s: call("done", message="all parts")]
    model, fallback = AgentScript(steps), AgentScript([])
    serve_site, _ = _example_helpers()
    with serve_site(ROOT / "tests" / "assets") as site:
        outcome = asyncio.run(_module(block)["main"](site.url("agent/list/1.html"), model=model, fallback_model=fallback))
    assert outcome == ("done", 12)
    assert "Step 8 of 12." in model.seen[-1].text and "chain up to 3 actions" in model.seen[0].system
    assert "the task expects 12" in model.seen[-1].text and not fallback.seen


SCENARIOS = {"login": login, "links": links, "pytest": pytest_flow, "batch": batch, "long_horizon": long_horizon}


@pytest.mark.parametrize("block", [b for b in ALL if b.kind == "scenario"], ids=lambda b: b.id)
def test_scenario_blocks(block: Block, docs_env: None, tmp_path: Path) -> None:
    SCENARIOS[block.arg](block, tmp_path)


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="mkdocs is not installed (pip install -e '.[docs]')")
def test_mkdocs_build_strict(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "site" / "guides" / "batch" / "index.html").exists()
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert "run_batch" in api and "Drive one Playwright page with natural language" in api
