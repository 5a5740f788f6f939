"""Prompt-processing time and memory of the embedded model at a few context and batch sizes.

    python benchmarks/local_engine_sizes.py                          # every configuration below
    python benchmarks/local_engine_sizes.py --configs 8192/2048/512 8192/512/256

What a call to the embedded model waits for is almost all prompt processing, so this times
exactly that: the real requests ``act()`` sends (captured with a scripted model, then replayed
to llama.cpp with one answer token and no prompt cache) on two pages of different size:

- ``forms``: "click the Sign in button" on tests/assets/forms.html (about 1,300 tokens);
- ``django``: "Filter the list to books that are not in stock" on the benchmark's Django admin
  book list (about 2,500 tokens: the first part the act sends of a big page).

Each configuration ``n_ctx/n_batch/n_ubatch`` runs in its own process (so its memory is its
own): load the model, one short warm-up request, then each prompt ``--runs`` times. Per
configuration it prints llama.cpp's prompt milliseconds and tokens per second, the CPU seconds
the process used for the prompt (steadier than the wall time on shared cores), the load time,
and the process's resident memory after the prompts (VmRSS) and at its peak (VmHWM). The load
average is printed: on shared cores compare configurations within one run.
Writes .bench/local_engine_sizes.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks"), str(ROOT / "benchmarks" / "django_site")]

from _local_bench import append_run, load, model_path

#: n_ctx/n_batch/n_ubatch; the first is llama.cpp's own default batch sizes at the library's n_ctx.
CONFIGS = ["8192/2048/512", "8192/2048/256", "8192/2048/1024", "4096/2048/512", "16384/2048/512"]
PROMPTS = {
    "forms": ("forms.html", "click the Sign in button"),
    "django": ("django", "Filter the list to books that are not in stock"),
}


async def capture(model_path: Path, token_budget: int) -> dict[str, dict[str, Any]]:
    """The first request act() sends on each page, as the engine's JSON parameters."""
    import serve  # benchmarks/django_site/serve.py
    from _browser import launch_chromium
    from _server import StaticServer
    from playwright.async_api import async_playwright

    from stagehand_py import Stagehand, StagehandError
    from stagehand_py.llm import LLMClient, LLMRequest, LocalModel
    from stagehand_py.testing import FunctionLLM

    seen: list[LLMRequest] = []

    def nothing(request: LLMRequest) -> dict[str, Any]:
        seen.append(request)
        return {"elements": []}

    engine_side = LocalModel(model_path)  # builds the engine's parameters; loads nothing
    client = LLMClient(FunctionLLM(nothing), choice_mode=True, max_reasks=0)
    server = StaticServer().start()
    proc, base = serve.start()
    out: dict[str, dict[str, Any]] = {}
    try:
        async with async_playwright() as pw:
            browser = await launch_chromium(pw)
            page = await browser.new_page()
            await serve.login(page, base)
            sh = Stagehand(page, model=client, token_budget=token_budget, dom_settle_timeout=1)
            for name, (where, instruction) in PROMPTS.items():
                await page.goto(base + serve.CHANGELIST if where == "django" else server.url(where))
                seen.clear()
                try:
                    await sh.act(instruction)
                except StagehandError:
                    pass  # the scripted model's empty answer; only the request it received matters
                out[name] = engine_side.build_params(seen[0])
            await browser.close()
    finally:
        proc.terminate()
        proc.wait(10)
        server.stop()
    return out


def memory() -> dict[str, int]:
    """This process's resident and peak resident memory, MiB."""
    status = Path("/proc/self/status").read_text()
    fields = {line.split(":")[0]: int(line.split()[1]) for line in status.splitlines() if line.startswith(("VmRSS", "VmHWM"))}
    return {"rss_mib": fields.get("VmRSS", 0) // 1024, "peak_mib": fields.get("VmHWM", 0) // 1024}


def one_config(model_path: Path, config: str, prompts_file: Path, runs: int, wanted: list[str]) -> dict[str, Any]:
    """In a child process: load with ``config``, time each prompt; the measurements."""
    from stagehand_py.llm import LocalModel

    n_ctx, n_batch, n_ubatch = (int(v) for v in config.split("/"))
    model = LocalModel(model_path, n_ctx=n_ctx, n_batch=n_batch, n_ubatch=n_ubatch)
    prompts = json.loads(prompts_file.read_text())
    started = time.perf_counter()
    model._get_engine()  # the load
    loaded_s = time.perf_counter() - started

    def timed(params: dict[str, Any]) -> dict[str, Any]:
        params = {**params, "max_tokens": 1, "cache_prompt": False}
        cpu = time.process_time()
        chunks = model._generate(params, threading.Event())
        timings = next((c["timings"] for c in reversed(chunks) if c.get("timings")), {})
        return {"prompt_n": timings.get("prompt_n"), "prompt_ms": timings.get("prompt_ms"),
                "cpu_s": round(time.process_time() - cpu, 1)}

    if wanted:
        timed({"messages": [{"role": "user", "content": "Say hello."}]})  # warm-up
    result: dict[str, Any] = {"config": config, "load_s": round(loaded_s, 1), "load_avg_start": os.getloadavg()[0]}
    for name, params in prompts.items():
        if name not in wanted:
            continue
        result[name] = [timed(params) for _ in range(runs)]
    result.update(memory())
    result["load_avg_end"] = os.getloadavg()[0]
    return result


def table(results: list[dict[str, Any]], names: list[str]) -> str:
    head = "| " + " | ".join(["n_ctx / n_batch / n_ubatch", *(f"{n}: tokens, prompt s, tok/s, CPU s" for n in names),
                             "load s", "RSS MiB", "peak MiB", "load avg"]) + " |"
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in results:
        if "error" in r:
            out.append(f"| {r['config']} | error: {r['error']} |")
            continue
        cells = []
        for n in names:
            runs = r.get(n)
            if not runs:
                cells.append("-")
                continue
            ms = sorted(run["prompt_ms"] for run in runs)[len(runs) // 2]
            tokens = runs[0]["prompt_n"]
            cpu = sorted(run["cpu_s"] for run in runs)[len(runs) // 2]
            cells.append(f"{tokens}, {ms / 1000:.1f}, {tokens / ms * 1000:.0f}, {cpu:.1f}")
        out.append("| " + " | ".join([r["config"], *cells, str(r["load_s"]), str(r["rss_mib"]), str(r["peak_mib"]),
                                      f"{r['load_avg_start']:.1f}-{r['load_avg_end']:.1f}"]) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="a .gguf path (default: the pinned model in the models folder)")
    parser.add_argument("--configs", nargs="+", default=CONFIGS, help="n_ctx/n_batch/n_ubatch each")
    parser.add_argument("--runs", type=int, default=1, help="times each prompt is timed per configuration")
    parser.add_argument("--pages", nargs="*", default=list(PROMPTS), choices=list(PROMPTS),
                        help="prompts to time (none: only the load and its memory)")
    parser.add_argument("--token-budget", type=int, default=6000)
    parser.add_argument("--out", type=Path, default=ROOT / ".bench" / "local_engine_sizes.json")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # child: one configuration
    parser.add_argument("--prompts", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    path = model_path(args.model)
    if args.one:
        print(json.dumps(one_config(path, args.one, args.prompts, args.runs, args.pages)))
        return 0
    print(f"model {path.name}; {load()}", flush=True)
    prompts = asyncio.run(capture(path, args.token_budget)) if args.pages else {}
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        prompts_file = Path(scratch) / "prompts.json"
        prompts_file.write_text(json.dumps(prompts))
        for config in args.configs:
            child = subprocess.run([sys.executable, __file__, "--model", str(path), "--one", config, "--prompts",
                                    str(prompts_file), "--runs", str(args.runs), "--pages", *args.pages],
                                   capture_output=True, text=True)
            if child.returncode != 0:
                results.append({"config": config, "error": (child.stderr.strip().splitlines() or ["?"])[-1]})
            else:
                results.append(json.loads(child.stdout.strip().splitlines()[-1]))
            print(json.dumps(results[-1]), flush=True)
    print()
    print(table(results, args.pages))
    print(f"\n{load()} at the end")
    append_run(args.out, {"model": str(path), "results": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
