"""The default per-sample runner: stagehand_py's agent, driven by a scripted model, over the product pages."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from stagehand_py.batch import Sample, TaskSpec, run_batch
from stagehand_py.batch._agent_runner import make_agent_runner
from stagehand_py.llm import LLMRequest, TextPart
from stagehand_py.testing import FunctionLLM

SPEC = TaskSpec(
    goal="Record the product's name and price.",
    output_schema={"type": "object", "properties": {"name": {"type": "string"}, "price": {"type": "string"}},
                   "required": ["name", "price"]},
    required_fields=["name", "price"],
    required_screenshots=["product page"],
    max_steps=5,
    max_time=60,
)


def step(tool: str, **args) -> dict:
    return {"evaluation_previous_step": "ok", "memory": "", "next_goal": tool, "action": {"tool": tool, "args": args}}


def scripted_agent(request: LLMRequest) -> dict:
    """Stateless, so concurrent samples can share it: screenshot first, then read the outline and finish."""
    assert request.purpose == "agent", request.purpose
    text = "\n".join(p.text for m in request.messages for p in m.content if isinstance(p, TextPart))
    assert 'call save_screenshot once for each of these names: "product page"' in text
    if "saved 001_product_page.png" not in text:
        return step("save_screenshot", name="product page")
    name = re.findall(r"heading: (.+)", text)[-1].strip()
    price = re.findall(r"StaticText: (\$[\d.]+)", text)[-1]
    return step("done", message="recorded", output={"name": name, "price": price})


async def test_agent_runner_over_the_product_pages(server, browser, tmp_path: Path) -> None:
    samples = [Sample(id=f"p{i}", url=server.url(f"products/{i}.html")) for i in (1, 2, 3)]
    result = await run_batch(samples, spec=SPEC, runner=make_agent_runner(model=FunctionLLM(scripted_agent)),
                             browser=browser, run_dir=tmp_path, concurrency=2)
    assert {k: (v["status"], v["data"]) for k, v in result.results.items()} == {
        "p1": ("done", {"name": "Trail Runner Shoes", "price": "$89.99"}),
        "p2": ("done", {"name": "Canvas Backpack", "price": "$54.00"}),
        "p3": ("done", {"name": "Steel Water Bottle", "price": "$19.50"}),
    }
    folder = tmp_path / "p2"
    stored = json.loads((folder / "result.json").read_text())
    (shot,) = stored["screenshots"]
    assert shot["name"] == "product page" and shot["sha256"] == hashlib.sha256((folder / shot["file"]).read_bytes()).hexdigest()
    log = json.loads((folder / "action_log.json").read_text())
    assert [entry["tool"] for entry in log] == ["goto", "save_screenshot", "done"]
    assert stored["usage"]["input_tokens"] >= 0


DOWNLOAD_SPEC = TaskSpec(goal="Download the price list.", max_steps=4, max_time=60)
PRICE_LIST = b"sku,price\nA1,10\n"


def download_agent(request: LLMRequest) -> dict:
    text = "\n".join(p.text for m in request.messages for p in m.content if isinstance(p, TextPart))
    if "price-list.csv" in text and "downloaded" in text.lower():
        return step("done", message="downloaded")
    link = re.search(r"\[(\d+-\d+)\] link: Price list", text)
    assert link, text
    return step("act", element_id=link.group(1), method="click")


async def test_a_download_joins_the_rows_evidence(server, browser, tmp_path: Path) -> None:
    from _server import Response

    page = '<!DOCTYPE html><html><body><a href="/price-list">Price list</a></body></html>'
    with server.route("/downloads.html", lambda req: Response.html(page)), server.route(
            "/price-list", lambda req: Response(body=PRICE_LIST, content_type="text/csv",
                                                headers={"Content-Disposition": 'attachment; filename="price-list.csv"'})):
        result = await run_batch([Sample(id="d1", url=server.url("downloads.html"))], spec=DOWNLOAD_SPEC,
                                 runner=make_agent_runner(model=FunctionLLM(download_agent)), browser=browser,
                                 run_dir=tmp_path, concurrency=1)
    assert result.results["d1"]["status"] == "done", result.results["d1"]
    stored = json.loads((tmp_path / "d1" / "result.json").read_text())
    (download,) = stored["extra"]["downloads"]
    assert download["suggested_filename"] == "price-list.csv" and download["size"] == len(PRICE_LIST)
    assert download["sha256"] == hashlib.sha256(PRICE_LIST).hexdigest()
    assert (tmp_path / "d1" / download["file"]).read_bytes() == PRICE_LIST  # in the evidence, not a scratch folder
    assert "path" not in download
