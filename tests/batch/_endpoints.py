"""Real remote browsers for ``--browser-endpoint`` tests, each started here and always stopped
(the whole process group, see tests/_processes.py):

- ``playwright_server``: ``playwright run-server`` on 127.0.0.1; the URL carries the launch
  options (Debian's Chromium, a user agent of our choosing) as a hosted service's URL would;
- ``cdp_chromium``: Chromium with ``--remote-debugging-port`` on 127.0.0.1; the URL is its
  ``http://127.0.0.1:<port>`` CDP endpoint.

Both browsers send ``user_agent``: a request carrying it came from that remote browser.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from _browser import CHROMIUM_ARGS, CHROMIUM_EXECUTABLE
from _processes import process_group


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def playwright_server(user_agent: str) -> Iterator[str]:
    port = free_port()
    command = [sys.executable, "-m", "playwright", "run-server", "--port", str(port), "--host", "127.0.0.1", "--unsafe"]
    with process_group(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as process:
        line = process.stdout.readline()
        assert "Listening on" in line, line
        launch = {"executablePath": CHROMIUM_EXECUTABLE, "headless": True,
                  "args": [*CHROMIUM_ARGS, f"--user-agent={user_agent}"]}
        yield f"ws://127.0.0.1:{port}/?launch-options={quote(json.dumps(launch))}"


@contextlib.contextmanager
def cdp_chromium(user_agent: str, profile: Path) -> Iterator[str]:
    port = free_port()
    command = ["/usr/lib/chromium/chromium", "--headless", f"--remote-debugging-port={port}",
               "--remote-debugging-address=127.0.0.1", f"--user-data-dir={profile}", f"--user-agent={user_agent}",
               *CHROMIUM_ARGS, "about:blank"]
    with process_group(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
        endpoint = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60  # ready in ~1 s on an idle machine
        while True:
            try:
                with urllib.request.urlopen(f"{endpoint}/json/version", timeout=5) as answer:
                    json.load(answer)
                break
            except OSError:
                assert time.monotonic() < deadline, "Chromium's debugging port never answered"
                time.sleep(0.2)
        yield endpoint
