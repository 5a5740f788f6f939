"""The run's combined outputs: ``combined.csv`` and a static ``report.html``."""

from __future__ import annotations

import csv
import html
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ._evidence import EvidenceStore, safe_component

__all__ = ["write_combined_csv", "write_report_html", "write_reports"]

_BASE_COLUMNS = ["sample_id", "url", "status", "error", "notes", "screenshots", "cost_usd"]


#: A cell starting with one of these is a formula to Excel, LibreOffice and Google Sheets: a page
#: could make an extracted value run as one when the CSV is opened (CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool | int | float):
        return str(value)  # numbers stay numbers (a negative number is not a formula)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    if text.startswith(_FORMULA_START):
        return "'" + text  # shown as text by every spreadsheet; the quote marks the neutralised cell
    return text


def _data_columns(results: list[Mapping[str, Any]]) -> list[str]:
    columns: dict[str, None] = {}
    for result in results:
        if isinstance(result.get("data"), dict):
            columns.update(dict.fromkeys(result["data"]))
    return list(columns)


def _cost(result: Mapping[str, Any]) -> float | None:
    """The row's model cost in US dollars; empty when unknown (a model without a price)."""
    cost = (result.get("usage") or {}).get("cost_usd")
    return cost if isinstance(cost, int | float) else None


def _total_cost(rows: list[Mapping[str, Any]]) -> str:
    costs = [_cost(r) for r in rows]
    known = sum(c for c in costs if c is not None)
    unknown = sum(1 for c in costs if c is None)
    return f"${known:.4f}" + (f" (+{unknown} rows of unknown cost)" if unknown else "")


def write_combined_csv(run_dir: Path | str | EvidenceStore, results: Mapping[str, Mapping[str, Any]]) -> Path | str:
    """One row per sample, sorted by sample id; data fields as columns (``data.<name>``), a
    non-dict ``data`` in one ``data`` column; lists and objects JSON-encoded."""
    rows = [results[key] for key in sorted(results)]
    data_columns = _data_columns(rows)
    header = [*_BASE_COLUMNS, *(f"data.{c}" for c in data_columns), "data"]
    buffer = io.StringIO()
    # RFC 4180 line ends: the writer then quotes a field holding a lone \r too (a page-supplied
    # value must not split a row for the readers that treat \r as a line end).
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(header)
    for result in rows:
        data = result.get("data")
        row = [
            result["sample_id"], result.get("url"), result["status"], result.get("error"),
            "; ".join(result.get("notes") or []), [s["file"] for s in result.get("screenshots") or []],
            _cost(result),
        ]
        row += [(data.get(c) if isinstance(data, dict) else None) for c in data_columns]
        row.append(None if isinstance(data, dict) else data)
        writer.writerow([_cell(v) for v in row])
    store = EvidenceStore.of(run_dir)
    store.write_bytes("combined.csv", buffer.getvalue().encode("utf-8"))
    return store.path_of("combined.csv")


_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5rem;color:#222}
table{border-collapse:collapse;width:100%}th,td{border:1px solid #ccc;padding:.4rem;vertical-align:top;text-align:left}
th{background:#f3f3f3}.s-done{background:#e6f6e6}.s-partial_success{background:#fff6dd}
.s-failed{background:#fde8e8}.s-unverified{background:#fdeee0}.s-needs_review{background:#e8eefd}pre{white-space:pre-wrap;margin:0;max-width:48rem}
img{max-width:220px;border:1px solid #999;display:block;margin-bottom:.3rem}.counts span{margin-right:1rem}
"""


def write_report_html(run_dir: Path | str | EvidenceStore, results: Mapping[str, Mapping[str, Any]], *, title: str = "") -> Path | str:
    """A self-contained page (no scripts, no network) with one row per sample: status, data,
    error and notes, and its screenshots linked from the sample's folder. Every value is
    HTML-escaped: page text is untrusted."""
    esc = html.escape
    store = EvidenceStore.of(run_dir)
    rows = [results[key] for key in sorted(results)]
    counts: dict[str, int] = {}
    for result in rows:
        counts[result["status"]] = counts.get(result["status"], 0) + 1
    out = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{esc(title or store.name)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{esc(title or store.name)}</h1>",
        '<p class="counts">' + "".join(f"<span>{esc(k)}: <b>{v}</b></span>" for k, v in sorted(counts.items()))
        + f"<span>model cost: <b>{esc(_total_cost(rows))}</b></span></p>",
        "<table><thead><tr><th>sample</th><th>status</th><th>run</th><th>data</th><th>screenshots</th></tr></thead><tbody>",
    ]
    for result in rows:
        folder = quote(safe_component(str(result["sample_id"]), fallback="sample"))
        status = str(result["status"])
        problems = [result.get("error") or "", *(result.get("notes") or [])]
        shots = "".join(
            f'<a href="{folder}/{quote(s["file"])}"><img src="{folder}/{quote(s["file"])}" alt="{esc(s["name"])}"></a>'
            f'<small title="sha256">{esc(s["file"])} {esc(s["sha256"][:12])}</small><br>'
            for s in result.get("screenshots") or []
        )
        out.append(
            f'<tr class="s-{esc(status)}" id="{esc(folder)}">'
            f'<td><a href="{folder}/result.json">{esc(str(result["sample_id"]))}</a><br>'
            f'<small>{esc(str(result.get("url") or ""))}</small></td>'
            f"<td>{esc(status)}" + "".join(f"<br><small>{esc(p)}</small>" for p in problems if p) + "</td>"
            f"<td>{_viewer_links(folder, result)}</td>"
            f"<td><pre>{esc(json.dumps(result.get('data'), indent=2, ensure_ascii=False, default=str))}</pre></td>"
            f"<td>{shots}</td></tr>"
        )
    out.append("</tbody></table></body></html>")
    store.write_bytes("report.html", "\n".join(out).encode("utf-8"))
    return store.path_of("report.html")


def _viewer_links(folder: str, result: Mapping[str, Any]) -> str:
    """Links to the row's run viewer and trace (``stagehand-py show``, ``playwright show-trace``), when kept."""
    kept = result.get("hashes") or {}
    links = [f'<a class="run" href="{folder}/run.html">run viewer</a>' if "run.html" in kept else "",
             f'<a class="trace" href="{folder}/trace.zip" title="playwright show-trace {folder}/trace.zip">trace.zip</a>'
             if "trace.zip" in kept else ""]
    return "<br>".join(link for link in links if link)


def write_reports(
    run_dir: Path | str | EvidenceStore, results: Mapping[str, Mapping[str, Any]], *, title: str = ""
) -> tuple[Path | str, Path | str]:
    return write_combined_csv(run_dir, results), write_report_html(run_dir, results, title=title)
