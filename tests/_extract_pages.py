"""The extract pages of tests/assets/extract (a table, a facet list, a detail page), their schemas,
and the data each holds, as the page writes it: one truth for the scripted choice-mode tests
(tests/operations/test_extract_choice.py) and the embedded-model benchmark
(benchmarks/local_extract_modes.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, HttpUrl


class City(BaseModel):
    name: str
    country: str
    population: int
    page: HttpUrl


class Cities(BaseModel):
    cities: list[City]


class Genre(BaseModel):
    name: str
    count: int


class Facets(BaseModel):
    total_results: int
    genres: list[Genre]


class Book(BaseModel):
    title: str
    author: str
    year: int
    pages: int
    publisher: str
    isbn: str
    price: str
    copies_in_stock: int
    subtitle: str | None = None
    reviews: HttpUrl
    summary: str = Field(description="a one-sentence summary of the book in your own words")


_CITIES = [("Amsterdam", "Netherlands", "931,298", 7), ("Berlin", "Germany", "3,878,100", 2),
           ("Lisbon", "Portugal", "567,131", 11), ("Madrid", "Spain", "3,460,491", 4),
           ("Vienna", "Austria", "2,028,499", 9), ("Warsaw", "Poland", "1,863,056", 5)]
_GENRES = [("Science fiction", "1,204"), ("Fantasy", "56"), ("Classics", "23"), ("Poetry", "8")]
#: What the summary field asks for is words of the model's own: any non-blank text is right.
SUMMARY = "A boy inherits the rule of a desert planet."
#: Fields whose value is the model's own words (not compared with the page).
GENERATED = {"summary"}


@dataclass(frozen=True)
class ExtractPage:
    name: str
    file: str
    instruction: str
    schema: type[BaseModel]
    #: Every value as the page writes it; a URL field as its link's name; None: not on the page.
    written: dict[str, Any]
    #: The data the caller should get, URLs relative to the server's root.
    data: dict[str, Any]


PAGES = [
    ExtractPage("table", "extract/cities.html", "every city in the table with its country, population and link", Cities,
                {"cities": [{"name": n, "country": c, "population": p, "page": n} for n, c, p, _ in _CITIES]},
                {"cities": [{"name": n, "country": c, "population": int(p.replace(",", "")), "page": f"geo/cities/{i}"}
                            for n, c, p, i in _CITIES]}),
    ExtractPage("facets", "extract/facets.html", "the total number of results, and each genre with its count", Facets,
                {"total_results": "1,291", "genres": [{"name": n, "count": c} for n, c in _GENRES]},
                {"total_results": 1291, "genres": [{"name": n, "count": int(c.replace(",", ""))} for n, c in _GENRES]}),
    ExtractPage("detail", "extract/book.html", "the book's details", Book,
                {"title": "Dune", "author": "Frank Herbert", "year": "1965", "pages": "412", "publisher": "Chilton Books",
                 "isbn": "978-0-441-17271-9", "price": "$9.99", "copies_in_stock": "12", "subtitle": None, "reviews": "Read 2,345 reviews",
                 "summary": SUMMARY},
                {"title": "Dune", "author": "Frank Herbert", "year": 1965, "pages": 412, "publisher": "Chilton Books",
                 "isbn": "978-0-441-17271-9", "price": "$9.99", "copies_in_stock": 12, "subtitle": None, "reviews": "books/dune/reviews",
                 "summary": SUMMARY}),
]


def with_urls(data: Any, prefix: str, key: str = "") -> Any:
    """``data`` with the URL fields' relative URLs made absolute under ``prefix``."""
    if isinstance(data, dict):
        return {k: with_urls(v, prefix, k) for k, v in data.items()}
    if isinstance(data, list):
        return [with_urls(v, prefix, key) for v in data]
    return prefix + data if key in ("page", "reviews") else data


def leaves(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """``value`` flattened to ``(path, scalar)`` pairs: ``cities[1].population``."""
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in leaves(v, f"{path}.{k}".lstrip("."))]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in leaves(v, f"{path}[{i}]")]
    return [(path, value)]
