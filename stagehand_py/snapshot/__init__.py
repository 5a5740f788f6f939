"""The snapshot engine: a page as an outline a model can read, with maps back to the page.

See :class:`Snapshot` for the format; :func:`split_outline` for token budgeting.
"""

from ._model import OutlineChunk, Snapshot, estimate_tokens, split_outline

__all__ = ["OutlineChunk", "Snapshot", "estimate_tokens", "split_outline"]
