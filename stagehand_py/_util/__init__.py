"""Small jobs the whole package shares, each written once: URL normalising, atomic writes,
JSON Schema helpers, deep merge and XPath literals. No I/O beyond the file being written; no state."""

from ._files import write_bytes_atomic, write_json_atomic
from ._merge import deep_merge
from ._schema import inline_refs, pop_defs, ref_target, schema_dict
from ._urls import UrlParts, normal_host, normalise_url, page_address, resolve_url, url_parts
from ._xpath import xpath_literal

__all__ = [
    "UrlParts",
    "deep_merge",
    "inline_refs",
    "normal_host",
    "normalise_url",
    "page_address",
    "resolve_url",
    "pop_defs",
    "ref_target",
    "schema_dict",
    "url_parts",
    "write_bytes_atomic",
    "write_json_atomic",
    "xpath_literal",
]
