"""The run viewer: ``run.html``, one self-contained page per agent run, batch row and failed
plugin test, showing what every step saw, chose, did and cost.

- :class:`RunRecorder` keeps a run's steps while it happens (it watches the browser context:
  :func:`watching`); :func:`verb_step` is a verb's call as a step (and a trace group).
- :func:`render_run_html` / :func:`write_run_html` make the page; :func:`summary_of` is its data.
- :mod:`._show` is ``stagehand-py show PATH``.
"""

from __future__ import annotations

import os
from pathlib import Path

from .._util import write_bytes_atomic
from ._html import render_run_html, summary_of
from ._record import Picture, RunRecorder, Step, recorder_of, verb_step, watching

__all__ = ["Picture", "RunRecorder", "Step", "recorder_of", "render_run_html", "summary_of", "verb_step", "watching",
           "write_run_html"]


def write_run_html(recorder: RunRecorder, path: str | os.PathLike[str]) -> Path:
    """Write ``recorder``'s run as ``path`` (atomically) and return it."""
    return write_bytes_atomic(path, render_run_html(recorder).encode("utf-8"))
