"""Helper processes a test starts (a Playwright server, a Chromium with a debugging port), always
stopped with everything they started: each runs in a process group of its own, and the group is
killed, not just the process (`python -m playwright run-server` runs a Node driver under it, which
outlived the run when only the Python process was terminated)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_group(process: subprocess.Popen) -> None:
    """SIGTERM the process's group, SIGKILL whatever is left after 10 s, and wait until none is left."""
    for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 30.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=0.1)  # reap the leader, or the group never empties
            if not _group_alive(process.pid):
                return
    raise AssertionError(f"process group {process.pid} survived SIGKILL")


@contextlib.contextmanager
def process_group(command: list[str], **popen: object) -> Iterator[subprocess.Popen]:
    """``subprocess.Popen(command)`` as the leader of a new process group, stopped (the whole
    group) when the block ends, however it ends."""
    process = subprocess.Popen(command, start_new_session=True, **popen)  # type: ignore[call-overload]
    try:
        yield process
    finally:
        stop_group(process)
