"""The action cache: observe/act results on disk, keyed by instruction, URL and variable names."""

from ._store import ActionCache, CacheEntry, CacheKey, ElementIdentity

__all__ = ["ActionCache", "CacheEntry", "CacheKey", "ElementIdentity"]
