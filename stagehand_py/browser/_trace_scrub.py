"""A Playwright ``trace.zip`` with every variable value taken out, rewritten before anyone reads it.

A trace keeps what was typed: a ``fill`` call's parameters and its log, every DOM snapshot after
it (input values, attributes, text the page echoed), the network (URLs, headers, request and
response bodies) and console messages. Each entry of the zip is rewritten:

- JSON lines (``*.trace``, ``*.network``) and JSON files: every string in them redacted (the
  secrets module's rule: the value and its echoes, in case, URL, HTML, JSON and base64 forms,
  become ``%name%``); strings, not raw text, so the JSON stays JSON (a full-width quote folded
  to ``"`` cannot break a line). A line still showing a value (one split across two strings) is
  dropped.
- ``resources/`` (bodies, snapshot resources): UTF-8 text is redacted; anything else (images,
  fonts, compressed data, once gunzipped) that holds a value in any form is emptied, since its
  bytes cannot be redacted without breaking it.
- ``screencast/`` frames are pictures of the page: typed text shows in them and no text search
  finds it, so with any value to hide they are left out (and their events with them).

The trace viewer finds resources by the name the trace gives them (their original SHA-1), which
are kept; a redacted body no longer matches its name, which the viewer does not check.
"""

from __future__ import annotations

import gzip
import io
import json
import zipfile
import zlib
from typing import Any

from .._secrets import VariableSet

__all__ = ["scrub_trace"]

#: Folders of pictures the trace takes of the page (screencast frames; screenshot snapshots).
_PICTURES = ("screencast/", "screenshots/")
#: Decompressed bytes checked at most in a compressed resource (a bomb stops there).
_MAX_INFLATED = 64 * 1024 * 1024


def scrub_trace(data: bytes, variables: VariableSet) -> bytes:
    """``data`` (a trace zip) with every value ``variables`` hides taken out of every entry."""
    if not variables.hides_anything:
        return data
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            name = info.filename
            if name.startswith(_PICTURES):
                continue
            body = source.read(info)
            if name.endswith((".trace", ".network")):
                body = _json_lines(body, variables)
            elif name.endswith((".json", ".stacks")):
                body = _json_file(body, variables)
            else:
                body = _resource(body, variables)
            target.writestr(_entry(info, variables.redact(name)), body)
    return out.getvalue()


def _entry(info: zipfile.ZipInfo, name: str) -> zipfile.ZipInfo:
    entry = zipfile.ZipInfo(name, date_time=info.date_time)
    entry.compress_type = zipfile.ZIP_DEFLATED
    entry.external_attr = info.external_attr
    return entry


def _json_lines(body: bytes, variables: VariableSet) -> bytes:
    lines: list[str] = []
    for line in body.decode("utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        if variables.redact(line) == line:  # nothing to hide: kept as written (most lines)
            lines.append(line)
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue  # not JSON, yet holding a value: dropped
        if isinstance(event, dict) and event.get("type") == "screencast-frame":
            continue  # its picture is left out
        cleaned = json.dumps(_strings(event, variables), ensure_ascii=False, separators=(",", ":"))
        if variables.redact(cleaned) == cleaned:
            lines.append(cleaned)
    return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""


def _json_file(body: bytes, variables: VariableSet) -> bytes:
    text = body.decode("utf-8", errors="replace")
    if variables.redact(text) == text:
        return body
    try:
        cleaned = json.dumps(_strings(json.loads(text), variables), ensure_ascii=False)
    except ValueError:
        return b""
    return cleaned.encode("utf-8") if variables.redact(cleaned) == cleaned else b""


def _strings(value: Any, variables: VariableSet) -> Any:
    """``value`` (parsed JSON) with every string in it, keys included, redacted."""
    if isinstance(value, str):
        return variables.redact(value)
    if isinstance(value, list):
        return [_strings(v, variables) for v in value]
    if isinstance(value, dict):
        return {variables.redact(k): _strings(v, variables) for k, v in value.items()}
    return value


def _resource(body: bytes, variables: VariableSet) -> bytes:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return b"" if _holds_value(body, variables) else body
    redacted = variables.redact(text)
    return body if redacted == text else redacted.encode("utf-8")


def _holds_value(body: bytes, variables: VariableSet) -> bool:
    """Whether binary ``body`` holds a value in any form: as bytes among the binary (UTF-8, Latin-1),
    or inside a gzip or zlib stream."""
    for candidate in (body, _inflated(body)):
        if candidate is None:
            continue
        for text in (candidate.decode("utf-8", errors="surrogateescape"), candidate.decode("latin-1")):
            if variables.redact(text) != text:
                return True
    return False


def _inflated(body: bytes) -> bytes | None:
    try:
        if body[:2] == b"\x1f\x8b":
            with gzip.GzipFile(fileobj=io.BytesIO(body)) as stream:
                return stream.read(_MAX_INFLATED)
        if body[:1] == b"\x78":
            return zlib.decompressobj().decompress(body, _MAX_INFLATED)
    except (OSError, EOFError, zlib.error):
        return None
    return None
