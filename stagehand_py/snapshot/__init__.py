"""The snapshot engine: a page as an outline a model can read, with maps back to the page.

See :class:`Snapshot` for the format; :func:`split_outline` for token budgeting.
"""

from ._model import OutlineChunk, Snapshot, estimate_tokens, split_outline
from ._records import ACTIONABLE_ROLES, SnapshotElement, parse_line, parse_outline

__all__ = ["ACTIONABLE_ROLES", "OutlineChunk", "Snapshot", "SnapshotElement", "estimate_tokens", "parse_line", "parse_outline", "split_outline"]
