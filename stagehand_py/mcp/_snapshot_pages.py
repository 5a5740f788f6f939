"""The MCP ``snapshot`` tool's pages: an outline cut to a token budget, in page order or ranked
by relevance to a query, with a header that says which page this is of how many and how to get
the next one."""

from __future__ import annotations

from .._errors import InvalidArgumentError
from .._operations._relevance import rank_chunks
from ..snapshot import OutlineChunk, Snapshot

__all__ = ["snapshot_page"]


def snapshot_page(snapshot: Snapshot, *, max_tokens: int, page: int = 1, query: str | None = None,
                  selector: str | None = None) -> str:
    """Page ``page`` (1-based) of ``snapshot``'s outline cut into parts of at most ``max_tokens``
    estimated tokens, with its header; with ``query``, the parts ranked best first (the header
    says where each sits in the page)."""
    if max_tokens < 1:
        raise InvalidArgumentError(f"max_tokens must be a positive number of tokens, not {max_tokens}.")
    chunks = snapshot.chunks(max_tokens)
    if not chunks:  # an empty outline is one empty page
        chunks = [OutlineChunk(index=0, text="", tokens=0, first_line=0, last_line=-1, context_lines=0)]
    if query:
        chunks = rank_chunks(chunks, query)
    count = len(chunks)
    if page < 1 or page > count:
        raise InvalidArgumentError(
            f"page {page} does not exist: the snapshot has {count} page(s) of at most {max_tokens} tokens; "
            f"ask for a page from 1 to {count}, or a larger max_tokens for fewer pages."
        )
    chunk = chunks[page - 1]
    total_lines = snapshot.tree.count("\n") + 1 if snapshot.tree else 0
    header = [
        f"URL: {snapshot.url}",
        f"Page {page} of {count} (about {chunk.tokens} tokens, max_tokens={max_tokens}; outline lines "
        f"{chunk.first_line + 1}-{chunk.last_line + 1} of {total_lines}).",
    ]
    if query:
        header.append(f"Pages are ranked by relevance to the query {query!r}, best first; this one is part "
                      f"{chunk.index + 1} of {count} in page order.")
    if chunk.context_lines:
        header.append(f"Its first {chunk.context_lines} line(s) repeat the enclosing elements, for context.")
    if page < count:
        arguments = [f"page={page + 1}", f"max_tokens={max_tokens}"]
        arguments += [f"query={query!r}"] if query else []
        arguments += [f"selector={selector!r}"] if selector else []
        header.append(f"Next: snapshot({', '.join(arguments)}). Element ids are valid on every page.")
    else:
        header.append("This is the last page.")
    return "\n".join(header) + "\n\n" + chunk.text
