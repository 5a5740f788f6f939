"""Structured records of outline lines: one parser every part of the library uses."""

from __future__ import annotations

import pytest

from stagehand_py import Snapshot, SnapshotElement
from stagehand_py.snapshot import ACTIONABLE_ROLES, parse_line, parse_outline

from .test_snapshot_pages import GOLDEN


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("[0-5] button: Sign in", ("0-5", "button", "Sign in", None, (), 0)),
        ("    [2-17] textbox: Email value=\"ada@example.com\" [required] [focused]",
         ("2-17", "textbox", "Email", "ada@example.com", ("required", "focused"), 2)),
        ("  [0-9] form", ("0-9", "form", "", None, (), 1)),
        ("[0-3] StaticText: Price: $5 [sale]", ("0-3", "StaticText", "Price: $5 [sale]", None, (), 0)),
        ('[0-4] textbox: Quote value="say \\"hi\\"" [filled]', ("0-4", "textbox", "Quote", 'say "hi"', ("filled",), 0)),
        ("[0-6] checkbox [checked] [disabled]", ("0-6", "checkbox", "", None, ("checked", "disabled"), 0)),
    ],
)
def test_parse_line_reads_from_the_right(line: str, expected: tuple[object, ...]) -> None:
    record = parse_line(line)
    assert record is not None
    assert (record.id, record.role, record.name, record.value, record.flags, record.depth) == expected
    assert record.line == line.lstrip(" ")


@pytest.mark.parametrize("line", ["", "hello", "[x-1] button: a", "  - button: no id"])
def test_non_element_lines_are_none(line: str) -> None:
    assert parse_line(line) is None


@pytest.mark.parametrize("path", sorted(GOLDEN))
def test_every_golden_line_round_trips(path: str) -> None:
    tree = GOLDEN[path].replace("#", "1")
    records = parse_outline(tree)
    assert len(records) == len(tree.split("\n"))
    for record, line in zip(records, tree.split("\n"), strict=True):
        assert "  " * record.depth + record.line == line


def test_snapshot_elements_carry_the_maps() -> None:
    snap = Snapshot("[0-1] main\n  [0-2] link: Home\n  [0-3] StaticText: hi", {"0-1": "/html[1]/body[1]/main[1]", "0-2": "/html[1]/body[1]/main[1]/a[1]"}, {"0-2": "http://127.0.0.1/"})
    assert snap.elements == [
        SnapshotElement("0-1", "main", "", None, (), 0, "/html[1]/body[1]/main[1]", None),
        SnapshotElement("0-2", "link", "Home", None, (), 1, "/html[1]/body[1]/main[1]/a[1]", "http://127.0.0.1/"),
        SnapshotElement("0-3", "StaticText", "hi", None, (), 1, "", None),
    ]
    assert [e.id for e in snap.elements if e.actionable] == ["0-2"]
    assert snap.element("0-2") == snap.elements[1]
    assert snap.element("0-99") is None
    assert "link" in ACTIONABLE_ROLES and "StaticText" not in ACTIONABLE_ROLES
