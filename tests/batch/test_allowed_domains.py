"""A batch task spec's ``allowed_domains`` hold every row's browser context, whatever its runner
does: the row's own navigation through a three-302 chain to the hostile host (``localhost``,
another port) is refused and is the row's ``blocked`` in ``result.json``; the control, the same
task without the field, reaches the hostile host."""

from __future__ import annotations

import json
import urllib.parse

import pytest
from _server import Request, Response
from pydantic import ValidationError

from stagehand_py import ConfigurationError
from stagehand_py.batch import Sample, SampleContext, SampleOutcome, TaskSpec, load_spec, run_batch


@pytest.fixture
def chain(server, cross_server):
    """``chain(v)``: an allowed URL answering three 302s, the last to the hostile ``/grab?v=...``,
    and the ``v`` of each request the hostile host received."""
    hits: list[str] = []

    def hop(req: Request) -> Response:
        n = int(req.query["n"])
        nxt = server.url("batch-hop?" + urllib.parse.urlencode({"n": n - 1, "v": req.query["v"]})) if n > 1 \
            else cross_server.url("grab?v=" + req.query["v"])
        return Response(302, "", headers={"Location": nxt})

    def grab(req: Request) -> Response:
        hits.append(req.query.get("v", ""))
        return Response.html("<title>hostile</title>")

    with server.route("/batch-hop", hop), cross_server.route("/grab", grab):
        yield (lambda v: server.url("batch-hop?" + urllib.parse.urlencode({"n": 3, "v": v}))), hits


async def _visit(ctx: SampleContext) -> SampleOutcome:
    """A runner that knows nothing of the guard: it opens the row's URL."""
    try:
        await ctx.page.goto(ctx.sample.url)
    except Exception as exc:  # refused: the row goes on
        return SampleOutcome(status="failed", error=str(exc).splitlines()[0])
    return SampleOutcome(status="done", data={"title": await ctx.page.title()})


@pytest.mark.parametrize("guarded", [True, False], ids=["guarded", "control-unguarded"])
async def test_a_task_holds_each_row_to_its_allowed_domains(browser, server, cross_server, chain, tmp_path,
                                                            guarded: bool) -> None:
    url_of, hits = chain
    spec = TaskSpec(goal="Open the page", **({"allowed_domains": [f"127.0.0.1:{server.port}"]} if guarded else {}))
    samples = [Sample(id="row", url=url_of("row"))]
    result = await run_batch(samples, spec=spec, runner=_visit, browser=browser, run_dir=tmp_path / "run")
    row = json.loads((tmp_path / "run" / "row" / "result.json").read_text())
    if guarded:
        assert hits == [] and "ERR_BLOCKED_BY_CLIENT" in row["error"]
        assert row["blocked"] == [{"url": cross_server.url("grab?v=row"), "kind": "navigation", "resource_type": "document"}]
        assert result.results["row"]["blocked"] == row["blocked"]
    else:
        assert hits == ["row"] and row["status"] == "done" and "blocked" not in row  # the control: it arrives


def test_a_bad_pattern_is_an_error_before_any_row(tmp_path) -> None:
    with pytest.raises(ValidationError, match="allowed_domains"):
        TaskSpec(goal="x", allowed_domains="example.com")  # type: ignore[arg-type]
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"goal": "x", "allowed_domains": ["https://"]}))
    with pytest.raises(ConfigurationError, match="names no host"):
        load_spec(spec)
