"""The snapshot engine: a page as an outline a model can read, with maps back to the page.

See :class:`Snapshot` for the format; :func:`split_outline` for token budgeting.
"""

from ._model import OutlineChunk, Snapshot, estimate_tokens, split_outline
from ._records import ACTIONABLE_ROLES, VOLATILE_FLAGS, SnapshotElement, parse_line, parse_outline, states_apart

__all__ = ["ACTIONABLE_ROLES", "OutlineChunk", "Snapshot", "SnapshotElement", "estimate_tokens", "VOLATILE_FLAGS", "parse_line", "parse_outline", "states_apart", "split_outline"]
