"""The order xdist hands files out in (tests/conftest.py: LONG_FILES, scripts/test.sh)."""

from __future__ import annotations

from pathlib import Path

from conftest import LONG_FILES

ROOT = Path(__file__).resolve().parent.parent


def test_every_long_file_exists() -> None:
    # A renamed file would silently drop back to the end of the queue.
    assert [name for name in LONG_FILES if not (ROOT / name).is_file()] == []


def test_every_real_model_file_is_handed_out_first() -> None:
    # A real-model test runs for minutes; one left to the end of the run keeps a worker busy alone.
    marked = {path.relative_to(ROOT).as_posix() for path in (ROOT / "tests").rglob("test_*.py")
              if "mark.real_model" in path.read_text() and path != Path(__file__).resolve()}
    assert marked and marked <= set(LONG_FILES), marked - set(LONG_FILES)


def test_the_ci_command_keeps_the_order() -> None:
    # xdist's default reorders files by their number of tests, which put the long ones last.
    assert "--dist loadfile --no-loadscope-reorder" in (ROOT / "scripts" / "test.sh").read_text()
