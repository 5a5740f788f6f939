"""Samples files are data, never a crash: real files with big cells, short and long rows, other
encodings, a BOM, blank lines; CSV, JSON and JSONL."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from stagehand_py import ConfigurationError
from stagehand_py.batch import samples_from_csv, samples_from_file, samples_from_json


def errors(samples) -> dict[str, str | None]:
    return {s.id: s.input_error for s in samples}


def test_cell_size_is_a_bound_the_user_sets_and_a_row_error_past_it(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "url", "note"])
        writer.writerow(["small", "http://127.0.0.1/1", "fine"])
        writer.writerow(["big", "http://127.0.0.1/2", "y" * 2_000_000])  # over csv's own 131,072 limit too
        writer.writerow(["after", "http://127.0.0.1/3", "also fine"])
    limit_before = csv.field_size_limit()
    samples = samples_from_csv(path)
    assert csv.field_size_limit() == limit_before  # the process-wide setting is put back
    assert errors(samples) == {"small": None, "after": None, "big": (
        f"{path} line 3: the cell 'note' (2,000,000 characters) is over the largest cell size of 1,000,000 characters: "
        "shorten it, or raise the bound (--max-cell-size / max_cell_chars=)")}
    assert samples[1].data == {} and samples[2].data == {"note": "also fine"}  # the huge value is not carried along
    raised = samples_from_csv(path, max_cell_chars=3_000_000)
    assert errors(raised)["big"] is None and len(raised[1].data["note"]) == 2_000_000
    assert errors(samples_from_csv(path, max_cell_chars=2_000_000))["big"] is None  # the bound itself is allowed
    assert "'note' (2,000,000 characters)" in str(errors(samples_from_csv(path, max_cell_chars=1_999_999))["big"])
    with pytest.raises(ConfigurationError, match="at least 1 character"):
        samples_from_csv(path, max_cell_chars=0)


def test_short_long_blank_rows_a_bom_and_multiline_cells(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    text = ('id,url,a,b\r\n'
            'one,http://127.0.0.1/1,x,y\r\n'
            '\r\n'
            ',,,\r\n'
            'two,http://127.0.0.1/2,"line\nbreak, and a comma",z\r\n'
            'short,http://127.0.0.1/3\r\n'
            'long,http://127.0.0.1/4,x,y,extra\r\n'
            'nourl,,x,y\r\n'
            ',http://127.0.0.1/p?q=1,x,y\r\n')
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    samples = samples_from_csv(path)
    assert errors(samples) == {
        "one": None, "two": None,
        "short": f"{path} line 7: 2 cells where the header has 4: quote cells that hold a comma, and give every row one cell per column",
        "long": f"{path} line 8: 5 cells where the header has 4: quote cells that hold a comma, and give every row one cell per column",
        "nourl": f"{path} line 9: the url is empty",
        "127.0.0.1_p_q_1": None,
    }
    assert samples[0].data == {"a": "x", "b": "y"}  # the BOM did not become part of the first column's name
    assert samples[1].data == {"a": "line\nbreak, and a comma", "b": "z"}


def test_other_encodings(tmp_path: Path) -> None:
    utf16 = tmp_path / "utf16.csv"
    utf16.write_bytes("id,url,city\nm,http://127.0.0.1/1,Malmö\n".encode("utf-16"))  # with its BOM, as Excel saves it
    assert samples_from_csv(utf16)[0].data == {"city": "Malmö"}
    latin = tmp_path / "latin1.csv"
    latin.write_bytes("id,url,city\na,http://127.0.0.1/1,Paris\nb,http://127.0.0.1/2,Malmö\n".encode("latin-1"))
    with pytest.raises(ConfigurationError, match=r"latin1.csv line 3 is not UTF-8 \(byte 0xf6 at offset \d+\): save the file as UTF-8"):
        samples_from_csv(latin)
    with pytest.raises(ConfigurationError, match="cannot read the samples file"):
        samples_from_csv(tmp_path / "missing.csv")


def test_json_and_jsonl_samples(tmp_path: Path) -> None:
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_bytes(b"\xef\xbb\xbf" + "\n".join([
        json.dumps({"id": "a", "url": "http://127.0.0.1/1", "n": 1, "tags": ["x"]}),
        "",
        "{not json",
        json.dumps(["a", "list"]),
        json.dumps({"id": "big", "url": "http://127.0.0.1/2", "note": "z" * 50}),
        json.dumps({"id": "b", "url": "http://127.0.0.1/3"}),
    ]).encode("utf-8"))
    samples = samples_from_file(jsonl, max_cell_chars=40)
    found = errors(samples)
    assert found["a"] is None and found["b"] is None and samples[0].data == {"n": "1", "tags": '["x"]'}
    assert found["line_3"].startswith(f"{jsonl} line 3: not valid JSON (")
    assert found["line_4"] == f"{jsonl} line 4: a list, not an object with a url"
    assert "'note' (50 characters) is over the largest cell size of 40" in found["big"]
    array = tmp_path / "rows.json"
    array.write_text(json.dumps([{"url": "http://127.0.0.1/1"}, 7]))
    assert errors(samples_from_json(array)) == {"127.0.0.1_1": None, "item_2": f"{array} item 2: a int, not an object with a url"}
    array.write_text(json.dumps({"url": "x"}))
    with pytest.raises(ConfigurationError, match="must hold a JSON array of sample objects, got dict"):
        samples_from_file(array)
    array.write_text("[{")
    with pytest.raises(ConfigurationError, match="rows.json is not valid JSON"):
        samples_from_file(array)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"url": "http://127.0.0.1/1"}\n{"url": "caf\xe9"}\n')
    with pytest.raises(ConfigurationError, match="bad.jsonl line 2 is not UTF-8"):
        samples_from_file(bad)


def test_the_cli_records_bad_rows_and_a_damaged_run_json_is_a_typed_error(tmp_path: Path, monkeypatch, capsys) -> None:
    from stagehand_py.batch._cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "task.json").write_text(json.dumps({"goal": "g"}))
    (tmp_path / "rows.csv").write_text("id,url\nonly_bad,\n")  # the url cell is empty
    # A file of bad rows only: nothing to open a page for, every row recorded with its error.
    code = main(["run", "--task", "task.json", "--samples", "rows.csv", "--no-progress", "--rate-limit", "0",
                 "--trace", "retain-on-failure"])
    out = capsys.readouterr().out
    assert code == 0 and "failed 1" in out
    (run_dir,) = (tmp_path / "evidence").glob("run_*")
    assert json.loads((run_dir / "run.json").read_text())["spec"]["trace"] == "retain-on-failure"  # --trace: every row's
    assert json.loads((run_dir / "only_bad" / "result.json").read_text())["error"] == "rows.csv line 2: the url is empty"
    assert "rows.csv line 2: the url is empty" in (run_dir / "combined.csv").read_text()
    # --max-cell-size sets the bound: with 5 characters the url cell is over it.
    (tmp_path / "urls.csv").write_text("id,url\nb,http://127.0.0.1:9/\n")
    code = main(["run", "--task", "task.json", "--samples", "urls.csv", "--no-progress", "--max-cell-size", "5",
                 "--evidence-dir", "small"])
    assert code == 0
    (small,) = (tmp_path / "small").glob("run_*")
    assert json.loads((small / "b" / "result.json").read_text())["error"] == (
        "urls.csv line 2: the cell 'url' (19 characters) is over the largest cell size of 5 characters: shorten it, "
        "or raise the bound (--max-cell-size / max_cell_chars=)")
    assert main(["run", "--task", "task.json", "--samples", "rows.csv", "--max-cell-size", "0"]) == 1
    assert "the largest cell size must be at least 1 character, got 0" in capsys.readouterr().err
    (run_dir / "run.json").write_text(json.dumps({"spec": {"goal": "g"}, "samples": [{"id": 3}]}))
    code = main(["run", "--resume", str(run_dir), "--no-progress"])
    assert code == 1 and "its run.json is damaged" in capsys.readouterr().err
