"""XPath 1.0 string literals (the language has no escape for quotes)."""

from __future__ import annotations

__all__ = ["xpath_literal"]


def xpath_literal(value: str) -> str:
    """An XPath 1.0 string literal for ``value`` (``concat()`` when it holds both kinds of quote)."""
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value:
        return f'"{value}"'
    return "concat(" + ", \"'\", ".join(f"'{part}'" for part in value.split("'")) + ")"
