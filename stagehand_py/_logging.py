"""The library's logger. Handlers are the application's business: we only emit records."""

from __future__ import annotations

import logging

logger = logging.getLogger("stagehand_py")
