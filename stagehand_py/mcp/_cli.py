"""``stagehand-py mcp``: serve the browser to an MCP client over stdio (default) or streamable HTTP.

::

    stagehand-py mcp                                   # stdio, model from the environment
    stagehand-py mcp --config server.json              # model, variables, allowed_domains, browser
    stagehand-py mcp --http --port 8931                # streamable HTTP on 127.0.0.1:8931/mcp
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from .._errors import StagehandError
from ._config import load_config
from ._server import serve

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stagehand-py mcp", description="an MCP server driving one browser")
    parser.add_argument("--config", type=Path, help="JSON configuration: model, base_url, variables, allowed_domains, "
                        "headless, executable_path, token_budget, agent_max_steps (see docs/guides/mcp.md)")
    parser.add_argument("--model", help="provider/model, e.g. openai/gpt-4.1-mini (default: from the environment, "
                        "else the embedded model when installed)")
    parser.add_argument("--base-url", help="an OpenAI-compatible server for an openai/<name> model")
    parser.add_argument("--allowed-domain", action="append", dest="allowed_domains", metavar="PATTERN",
                        help="allow only these domains (repeatable; e.g. example.com, *.example.com)")
    parser.add_argument("--headed", action="store_true", help="show the browser")
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP on 127.0.0.1 instead of stdio")
    parser.add_argument("--port", type=int, default=8931, help="the HTTP port (default: 8931)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        config = load_config(args.config, model=args.model, base_url=args.base_url,
                             allowed_domains=args.allowed_domains, headless=False if args.headed else None)
        asyncio.run(serve(config, transport="http" if args.http else "stdio", port=args.port))
    except KeyboardInterrupt:
        return 130
    except StagehandError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0
