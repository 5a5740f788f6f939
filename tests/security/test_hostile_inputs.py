"""Hostile inputs that must get a typed error or be neutralised, never reach the network or a
spreadsheet formula: a remote $ref in a user's JSON Schema, a page-controlled extracted value
that is a CSV formula, variables of the wrong shape. Each test has a control that shows what it
guards against actually happens without the guard."""

from __future__ import annotations

import csv
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import jsonschema
import pytest

from stagehand_py import InvalidArgumentError, InvalidSchemaError, Stagehand
from stagehand_py.batch._report import write_combined_csv
from stagehand_py.llm._structured import check_json_schema, validation_errors
from stagehand_py.testing import FunctionLLM


class _Counting(BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        body = b'{"type": "string"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def schema_host():
    """A second loopback host that serves a schema and counts who asks for it."""
    _Counting.hits = []
    server = ThreadingHTTPServer(("127.0.0.2", 0), _Counting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.2:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _remote_schema(host: str) -> dict:
    return {"type": "object", "properties": {"title": {"$ref": f"{host}/title.json"}}}


def test_a_remote_ref_is_refused_and_never_fetched(schema_host: str) -> None:
    schema = _remote_schema(schema_host)
    with pytest.raises(InvalidSchemaError, match="remote \\$ref") as info:
        check_json_schema(schema, what="extract(schema=...)")
    assert "$defs" in str(info.value)
    # Validation itself resolves nothing outside the schema either.
    with pytest.raises(InvalidSchemaError):
        validation_errors({"title": 1}, schema)
    assert _Counting.hits == []


def test_control_jsonschemas_legacy_resolver_would_fetch_it(schema_host: str) -> None:
    """Control: left to jsonschema's deprecated automatic resolution, the same schema makes the
    process fetch the remote document (what the guard above prevents)."""
    with pytest.warns(DeprecationWarning):
        resolver = jsonschema.RefResolver.from_schema(_remote_schema(schema_host))
        jsonschema.Draft202012Validator(_remote_schema(schema_host), resolver=resolver).is_valid({"title": "x"})
    assert _Counting.hits == ["/title.json"]


def test_local_refs_still_work_and_dangling_ones_are_named() -> None:
    schema = {"type": "object", "$defs": {"t": {"type": "string"}}, "properties": {"title": {"$ref": "#/$defs/t"}}}
    check_json_schema(schema, what="output")
    assert validation_errors({"title": "x"}, schema)[0] == []
    assert validation_errors({"title": 1}, schema)[0]
    with pytest.raises(InvalidSchemaError, match="names nothing"):
        check_json_schema({"properties": {"a": {"$ref": "#/$defs/missing"}}}, what="output")


@pytest.mark.parametrize("value", ["=HYPERLINK(\"http://evil\",\"x\")", "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\t=1", "\r=1"])
def test_extracted_values_never_become_spreadsheet_formulas(tmp_path: Path, value: str) -> None:
    results = {"row-1": {"sample_id": "row-1", "status": "ok", "data": {"title": value, "price": -5, "ok": True}}}
    path = write_combined_csv(tmp_path, results)
    with path.open(newline="", encoding="utf-8") as f:
        row = next(iter(csv.DictReader(f)))
    assert row["data.title"].startswith("'") and row["data.title"].lstrip("'").strip() == value.strip()
    assert row["data.price"] == "-5" and row["data.ok"] == "True"  # numbers stay numbers


def test_control_plain_text_is_untouched(tmp_path: Path) -> None:
    results = {"row-1": {"sample_id": "row-1", "status": "ok", "data": {"title": "Plain title"}}}
    with write_combined_csv(tmp_path, results).open(newline="", encoding="utf-8") as f:
        assert next(iter(csv.DictReader(f)))["data.title"] == "Plain title"


@pytest.mark.parametrize("variables", [["username", "ada"], "ada", 42])
async def test_variables_of_the_wrong_shape_get_a_typed_error(page, variables: object) -> None:
    await page.set_content("<input aria-label=User>")
    sh = Stagehand(page, model=FunctionLLM(lambda request: {"elements": []}))
    with pytest.raises(InvalidArgumentError, match="variables must be a mapping"):
        await sh.observe("fill the user field", variables=variables)  # type: ignore[arg-type]
