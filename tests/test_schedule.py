"""How xdist hands files out (tests/conftest.py: LONG_FILES, REAL_MODEL_FILES; scripts/test.sh)."""

from __future__ import annotations

from pathlib import Path

from conftest import LONG_FILES, REAL_MODEL_FILES, REAL_MODEL_UNIT, xdist_unit

ROOT = Path(__file__).resolve().parent.parent


def test_every_long_file_exists() -> None:
    # A renamed file would silently drop back to the end of the queue.
    assert [name for name in LONG_FILES if not (ROOT / name).is_file()] == []


def test_every_real_model_file_is_in_the_one_unit_handed_out_first() -> None:
    # A real-model test runs for minutes on both cores: one left to the end keeps a worker busy
    # alone, and two at once on the two workers fight over the cores.
    marked = {path.relative_to(ROOT).as_posix() for path in (ROOT / "tests").rglob("test_*.py")
              if "mark.real_model" in path.read_text() and path != Path(__file__).resolve()}
    assert marked == set(REAL_MODEL_FILES)
    assert set(REAL_MODEL_FILES) <= set(LONG_FILES)
    assert max(LONG_FILES, key=LONG_FILES.__getitem__) in REAL_MODEL_FILES
    assert {xdist_unit(f"{name}::test_x") for name in REAL_MODEL_FILES} == {REAL_MODEL_UNIT}
    assert xdist_unit("tests/test_util.py::test_x[a::b]") == "tests/test_util.py"  # the control: a file of its own


def test_the_ci_command_keeps_the_order() -> None:
    # xdist's default reorders files by their number of tests, which put the long ones last.
    assert "--dist loadfile --no-loadscope-reorder" in (ROOT / "scripts" / "test.sh").read_text()
