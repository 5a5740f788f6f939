"""Loads the JavaScript shipped next to this module (read once per process, then cached).

The sources are read lazily, on first use, so importing the package touches no files; the
cache holds immutable strings only.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Literal

__all__ = ["load_js"]

ScriptName = Literal["_resolver.js", "_shadow_init.js", "_scroll.js"]


@functools.cache
def load_js(name: ScriptName) -> str:
    """Return the source of one of the package's JS files."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
