"""The batch runner on the local multi-sample site (tests/assets/products*), with a scripted model."""

from __future__ import annotations

import csv
import hashlib
import json
import socket
import time
from datetime import datetime
from pathlib import Path

import pytest

from stagehand_py.batch import (
    Discovery,
    DomainRateLimiter,
    Sample,
    TaskSpec,
    discover_samples,
    run_batch,
    write_reports,
)

from ._scripted_runner import make_runner


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


SPEC = TaskSpec(
    goal="Record each product's name and price",
    output_schema={"type": "object"},
    required_fields=["name", "price"],
    required_screenshots=["product page"],
    max_time=30,
)


async def test_batch_on_the_product_site(server, browser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    samples = await discover_samples(browser, Discovery(url=server.url("products.html"), link_pattern=r"/products/\d+\.html$"))
    assert [s.url for s in samples] == [server.url(f"products/{i}.html") for i in range(1, 7)]
    samples += [
        Sample(id="no_price", url=server.url("index.html")),         # done without a price -> partial_success
        Sample(id="../../escape", url=server.url("missing.html")),   # 404 -> failed; the id cannot leave the run folder
        Sample(id="refused", url=f"http://127.0.0.1:{closed_port()}/"),  # navigation error -> failed, batch goes on
    ]
    starts: list[float] = []  # when the rate limiter let each sample go
    original_wait = DomainRateLimiter.wait

    async def timed_wait(self: DomainRateLimiter, url: str) -> str | None:
        turn = await original_wait(self, url)
        starts.append(time.monotonic())
        return turn

    monkeypatch.setattr(DomainRateLimiter, "wait", timed_wait)
    timed = make_runner()

    seen: list[tuple[str, str]] = []
    run_dir = tmp_path / "run_x"
    result = await run_batch(samples, spec=SPEC, runner=timed, browser=browser, run_dir=run_dir,
                             concurrency=3, rate_limit=0.2, on_status=lambda s, st: seen.append((s.id, st)))
    statuses = {k: v["status"] for k, v in result.results.items()}
    product_ids = [s.id for s in samples[:6]]
    assert statuses == {
        **{i: "done" for i in product_ids[:5]}, product_ids[5]: "needs_review",
        "no_price": "partial_success", "../../escape": "failed", "refused": "failed",
    }
    assert result.counts == {"done": 5, "unverified": 0, "partial_success": 1, "failed": 2, "needs_review": 1}
    assert [st for _, st in seen].count("running") == 9 and len(seen) == 18

    # per-domain rate limit: starts on 127.0.0.1 at least 0.2 s apart (concurrency alone would allow 3 at once)
    local = sorted(starts)
    assert len(local) == 9
    assert all(b - a >= 0.19 for a, b in zip(local, local[1:])), [round(b - a, 3) for a, b in zip(local, local[1:])]
    # each row keeps when the limiter gave it its turn: the same spacing, in its result.json
    turns = sorted(datetime.fromisoformat(r["host_turn_at"]).timestamp() for r in result.results.values())
    assert len(turns) == 9 and all(b - a >= 0.19 for a, b in zip(turns, turns[1:]))

    # evidence layout, hashes recorded at write time, isolation
    first = run_dir / product_ids[0]
    assert sorted(p.name for p in first.iterdir()) == ["001_product_page.png", "action_log.json", "checkpoint.json",
                                                        "result.json", "run.html"]
    stored = json.loads((first / "result.json").read_text())
    assert stored["data"] == {"name": "Trail Runner Shoes", "price": "$89.99", "tags": ["trail", "runner"]}
    assert stored["hashes"] == {name: hashlib.sha256((first / name).read_bytes()).hexdigest()
                                for name in ("001_product_page.png", "run.html")}
    assert json.loads((first / "checkpoint.json").read_text())["state"] == "complete"
    assert [a["action"] for a in json.loads((first / "action_log.json").read_text())] == ["goto", "extract"]
    assert all(r.get("extra", {}).get("leftover_cookies", 0) == 0 for r in result.results.values())
    assert "required screenshots missing: product page" in result.results[product_ids[5]]["notes"]
    assert result.results["no_price"]["notes"] == ["required fields missing or empty: price"]
    assert result.results["../../escape"]["error"] == "HTTP 404"
    assert (run_dir / "escape" / "001_error_page.png").exists() and not (tmp_path / "escape").exists()
    assert "Page.goto: net::ERR_CONNECTION_REFUSED" in result.results["refused"]["error"]
    assert not list(run_dir.rglob("*.tmp"))

    # combined.csv (sorted by id, lists JSON-encoded) and report.html (escaped, screenshots linked)
    write_reports(run_dir, result.results, title="<b>products</b>")
    with (run_dir / "combined.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [r["sample_id"] for r in rows] == sorted(statuses)
    row = next(r for r in rows if r["sample_id"] == product_ids[1])
    assert (row["status"], row["data.name"], row["data.price"]) == ("done", "Canvas Backpack", "$54.00")
    assert json.loads(row["data.tags"]) == ["canvas", "backpack"] and json.loads(row["screenshots"]) == ["001_product_page.png"]
    report = (run_dir / "report.html").read_text()
    assert "&lt;b&gt;products&lt;/b&gt;" in report and "<b>products</b>" not in report
    assert f'<img src="{product_ids[0]}/001_product_page.png"' in report
    assert "done: <b>5</b>" in report and "<script" not in report
