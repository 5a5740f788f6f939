"""``stagehand-py mcp``: a Model Context Protocol server that drives one browser.

Tools: navigate, snapshot, act_on_element (by a snapshot id, no model), observe, act, extract
(JSON Schema), screenshot, list_tabs, switch_tab, agent. The model, the variables (referred to by
``%name%``; values never reach the client) and ``allowed_domains`` are the server's
configuration. Needs the ``mcp`` extra. See docs/guides/mcp.md.
"""

from ._cli import main
from ._config import MCPServerConfig, VariableSource, load_config
from ._server import build_server

__all__ = ["MCPServerConfig", "VariableSource", "build_server", "load_config", "main"]
