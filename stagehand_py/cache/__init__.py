"""The action cache: observe/act results on disk, keyed by instruction, URL and variable names."""

from ._store import ActionCache, CacheKey, normalize_url

__all__ = ["ActionCache", "CacheKey", "normalize_url"]
