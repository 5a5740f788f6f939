"""``run.html``: one run, step after step, in one file a browser opens from disk with no network.

Per step: the masked screenshot with the chosen element boxed and numbered (a box drawn over the
image, placed in percent of its size so it stays on the element however the image is scaled), the
outline lines around that element as the model saw them (the chosen line marked), the model's
answer (tool, element, arguments with placeholders, reasoning fields), the outcome, and the time,
tokens and cost. At the top: the run's status, totals, and a bar of time per step.

Images are inlined (``data:`` URIs), the style is inline, there is no script; a Content Security
Policy forbids any request besides those ``data:`` images, so the page works (and stays) offline.
The run's summary is embedded as JSON (``<script type="application/json" id="stagehand-run">``,
data, never run) for ``stagehand-py show``. Every text is redacted, then HTML-escaped (the page as
a whole is not: a short value, a PIN "1", would be cut out of the CSS and the images too).
"""

from __future__ import annotations

import base64
import html
import io
import json
import time
from typing import Any

from PIL import Image

from .._vision._image import encode_smallest
from ._record import Picture, RunRecorder, Step

__all__ = ["render_run_html", "summary_of"]

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.2rem auto;max-width:78rem;color:#1d1d1f;padding:0 1rem}
h1{font-size:1.35rem;margin:.2rem 0}h2{font-size:1.05rem;margin:0 0 .4rem}h3{font-size:.85rem;margin:.6rem 0 .2rem;color:#555}
.totals span{margin-right:1.2rem}.bar{display:flex;height:1.6rem;margin:.8rem 0 1.2rem;border:1px solid #bbb;border-radius:4px;overflow:hidden}
.bar a{display:block;border-right:1px solid #fff;color:#fff;font-size:.75rem;text-align:center;line-height:1.6rem;
text-decoration:none;overflow:hidden;min-width:2px}.seg-ok{background:#2f7d4a}.seg-failed{background:#b3261e}.seg-none{background:#6b7280}
.step{border:1px solid #ccc;border-radius:6px;padding:.8rem;margin:0 0 1.2rem}.step.failed{border-color:#b3261e}
.badge{font-size:.75rem;padding:.05rem .4rem;border-radius:3px;color:#fff;vertical-align:middle}.b-ok{background:#2f7d4a}
.b-failed{background:#b3261e}.b-none{background:#6b7280}.meta{color:#555;font-size:.85rem;margin:.1rem 0 .6rem}
.cols{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:1rem}
.shot{position:relative;margin:0;display:inline-block;max-width:100%;line-height:0;border:1px solid #999}
.shot img{max-width:100%;height:auto;display:block}
.box{position:absolute;border:3px solid #ff3b30;box-sizing:border-box;pointer-events:none}
.box span{position:absolute;left:-3px;top:-1.3rem;background:#ff3b30;color:#fff;font:bold .75rem/1.2rem system-ui;padding:0 .3rem}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;padding:.5rem;margin:0;font-size:.78rem;line-height:1.35}
pre mark{background:#ffe08a}dl{display:grid;grid-template-columns:max-content 1fr;gap:.15rem .6rem;margin:0;font-size:.85rem}
dt{color:#555}dd{margin:0;word-break:break-word}
"""

_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


def _seconds(step: Step, recorder: RunRecorder, now: float) -> float:
    index = recorder.steps.index(step)
    following = recorder.steps[index + 1].started if index + 1 < len(recorder.steps) else now
    return max(0.0, (step.ended if step.ended is not None else following) - step.started)


def summary_of(recorder: RunRecorder) -> dict[str, Any]:
    """The run as data (no images): what ``stagehand-py show`` prints, embedded in the page."""
    now = time.monotonic()
    steps: list[dict[str, Any]] = [{
        "step": s.number, "title": s.title, "ok": s.ok, "seconds": round(_seconds(s, recorder, now), 3),
        "start": round(s.started - recorder.started, 3), "tokens": s.usage.input_tokens + s.usage.output_tokens,
        "cost_usd": s.usage.cost_usd, "pictures": len(s.pictures),
        "boxes": [[round(v, 2) for v in box[1:]] for p in s.pictures for box in p.boxes],
    } for s in recorder.steps]
    costs: list[float | None] = [s["cost_usd"] for s in steps]
    summary: dict[str, Any] = recorder.variables.redact_data({
        "title": recorder.title, **recorder.meta, "steps": steps,
        "seconds": round(sum(float(s["seconds"]) for s in steps), 3), "tokens": sum(int(s["tokens"]) for s in steps),
        "cost_usd": None if any(c is None for c in costs) else round(sum(c for c in costs if c is not None), 6),
    })
    return summary


def _image(picture: Picture) -> tuple[str, int, int]:
    """The picture as a data URI (PNG or JPEG, whichever is smaller), and its size in pixels."""
    encoded = encode_smallest(Image.open(io.BytesIO(picture.png)))
    return f"data:{encoded.media_type};base64,{base64.b64encode(encoded.data).decode()}", encoded.width, encoded.height


def _figure(picture: Picture, number: int, index: int) -> str:
    uri, width, height = _image(picture)
    boxes = []
    for label, x, y, w, h in picture.boxes:
        style = (f"left:{100 * x / picture.width:.4f}%;top:{100 * y / picture.height:.4f}%;"
                 f"width:{100 * w / picture.width:.4f}%;height:{100 * h / picture.height:.4f}%")
        boxes.append(f'<div class="box" style="{style}" data-box="{html.escape(label)}" data-x="{x:.2f}" data-y="{y:.2f}" '
                     f'data-w="{w:.2f}" data-h="{h:.2f}"><span>{html.escape(label)}</span></div>')
    return (f'<figure class="shot" data-viewport="{picture.width}x{picture.height}"><img src="{uri}" width="{width}" '
            f'height="{height}" alt="step {number}, picture {index}">{"".join(boxes)}</figure>')


def _value(value: Any) -> str:
    """One field's value: a mapping as its own list of fields, a list one item per line."""
    if isinstance(value, dict):
        return _fields(value)
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        return "".join(_fields(v) for v in value)
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return "<br>".join(html.escape(str(v)[:1000]) for v in value)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return html.escape(text[:4000])


def _fields(values: dict[str, Any]) -> str:
    rows = [f"<dt>{html.escape(str(key))}</dt><dd>{_value(value)}</dd>" for key, value in values.items()
            if value not in (None, "", [], {})]
    return f"<dl>{''.join(rows)}</dl>" if rows else "<p>(nothing recorded)</p>"


def _outline(step: Step) -> str:
    if not step.outline:
        return "<p>(none: no model read the page for this step)</p>"
    lines = [f"<mark>{html.escape(line)}</mark>" if i == step.chosen else html.escape(line) for i, line in enumerate(step.outline)]
    return f'<pre class="outline">{chr(10).join(lines)}</pre>'


def _state(ok: bool | None) -> str:
    return "none" if ok is None else "ok" if ok else "failed"


def _money(cost: float | None) -> str:
    return "cost unknown" if cost is None else f"${cost:.4f}"


def render_run_html(recorder: RunRecorder) -> str:
    """The whole page for ``recorder``'s run (see the module's docstring)."""
    esc, redact = html.escape, recorder.variables.redact
    summary = summary_of(recorder)
    total = summary["seconds"] or 1.0
    bar = "".join(
        f'<a href="#step-{s["step"]}" class="seg-{_state(s["ok"])}" style="flex:{max(s["seconds"], total / 400):.4f}" '
        f'title="step {s["step"]}: {esc(s["title"])} ({s["seconds"]:.2f} s)">{s["step"]}</a>' for s in summary["steps"])
    head = [f'<meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="{_CSP}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{esc(summary['title'] or 'stagehand_py run')}</title><style>{_STYLE}</style>"]
    status = summary.get("status")
    body = [f"<h1>{esc(summary['title'] or 'stagehand_py run')}</h1>",
            f"<p>{esc(str(summary.get('message', '')))}</p>" if summary.get("message") else "",
            '<p class="totals">' + (f"<span>status: <b>{esc(str(status))}</b></span>" if status else "")
            + f"<span>steps: <b>{len(summary['steps'])}</b></span><span>time: <b>{summary['seconds']:.1f} s</b></span>"
            f"<span>tokens: <b>{summary['tokens']:,}</b></span><span>model cost: <b>{_money(summary['cost_usd'])}</b></span></p>",
            f'<nav class="bar" aria-label="time per step">{bar}</nav>']
    for step, data in zip(recorder.steps, summary["steps"], strict=True):
        figures = "".join(_figure(p, step.number, i) for i, p in enumerate(step.pictures, start=1)) or "<p>(no picture)</p>"
        body.append(
            f'<section class="step {_state(step.ok)}" id="step-{step.number}" data-step="{step.number}">'
            f'<h2>#{step.number} {esc(redact(step.title))} <span class="badge b-{_state(step.ok)}">'
            f'{ {"ok": "ok", "failed": "failed", "none": "no result"}[_state(step.ok)] }</span></h2>'
            f'<p class="meta">at +{data["start"]:.2f} s · {data["seconds"]:.2f} s · {data["tokens"]:,} tokens · '
            f'{_money(data["cost_usd"])}</p><div class="cols"><div>{figures}</div><div>'
            f"<h3>Outline the model saw</h3>{_outline(step)}"
            f"<h3>Answer</h3>{_fields(recorder.variables.redact_data(step.answer))}"
            f"<h3>Outcome</h3>{_fields(recorder.variables.redact_data(step.outcome))}</div></div></section>")
    data_json = json.dumps(summary, ensure_ascii=False).replace("<", "\\u003c")
    page = (f'<!DOCTYPE html>\n<html lang="en"><head>{"".join(head)}</head><body>{"".join(body)}'
            f'<script type="application/json" id="stagehand-run">{data_json}</script></body></html>\n')
    return page
