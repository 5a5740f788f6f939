"""What ``extract(..., report=True)`` returns: the data, and how it was read.

``extract()`` returns the data alone, as it always has. With ``report=True`` it returns an
:class:`ExtractResult` instead: the same data in ``.data``, plus where each value came from
(the page line it was read from, or the model's own words), the near misses the page corrected
or re-asked, the fields left out and why, and how many calls and seconds of waiting it took.
A flag rather than a second method or a ``last_report`` attribute: one verb and its overloads,
typed per call (a ``last_*`` attribute would be shared by concurrent calls and tabs).

Nothing here holds a variable's value: paths, line numbers and element ids, and the model's
answers in :class:`~stagehand_py.Repair` records (redacted, as every exit is).
"""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from .._types import Repair
from ._extract_choice import Sourced

__all__ = ["ExtractMode", "ExtractResult", "ExtractedValue", "values_of"]

T = TypeVar("T")

#: How the model answered: ``"choice"`` with page lines (the library read the values),
#: ``"schema"`` with values it wrote in the caller's schema, ``"text"`` in words (an instruction
#: without a schema), ``"page_text"`` not at all (neither an instruction nor a schema).
ExtractMode: TypeAlias = Literal["choice", "schema", "text", "page_text"]


class ExtractedValue(BaseModel):
    """Where one value of the data came from."""

    model_config = ConfigDict(frozen=True)

    #: The value's place in the data, ``$`` the data itself: ``$.products[0].price``.
    path: str
    #: ``"line"``: read from a page line; ``"generated"``: words the model wrote for a field that
    #: asks for words not on the page (a summary); ``"answered"``: written by the model where no
    #: line holds the value as such and the schema bounds it (a yes/no, one of the schema's values).
    source: Literal["line", "generated", "answered"]
    #: The number of the page line it was read from, as the model was shown it (1 first).
    line: int | None = None
    #: That line's element in the page's outline (``Stagehand.snapshot()``'s ids, e.g. ``"0-24"``).
    element_id: str | None = None


class ExtractResult(BaseModel, Generic[T]):
    """The data of one ``extract(..., report=True)`` call and how it was read."""

    model_config = ConfigDict(frozen=True)

    #: What ``extract()`` returns without ``report=True``.
    data: T
    mode: ExtractMode
    #: Where each value came from (choice mode: every value; ``"text"``: the answer, generated;
    #: ``"schema"``: none, since the model wrote every value).
    values: list[ExtractedValue] = Field(default_factory=list)
    #: Near misses in the model's answers that the page corrected, re-asked, or left out, in order.
    repairs: list[Repair] = Field(default_factory=list)
    #: Paths of fields left out of the data (each with its repair saying why).
    dropped: list[str] = Field(default_factory=list)
    #: Model calls that gave the data (re-asks not counted; ``Stagehand.metrics`` has them all).
    calls: int = 0
    #: Seconds spent waiting for the page to change after the first read found nothing.
    waited: float = 0.0

    @property
    def generated(self) -> list[str]:
        """Paths of the values the model wrote in its own words (not read from the page)."""
        return [value.path for value in self.values if value.source == "generated"]


def values_of(sources: Any, path: str = "$") -> list[ExtractedValue]:
    """The sources tree of a reading (objects and lists of :class:`Sourced`) as a flat list."""
    if isinstance(sources, Sourced):
        line = sources.line
        return [ExtractedValue(path=path, source=sources.source, line=line.number if line else None,
                               element_id=(line.element_id or None) if line else None)]
    if isinstance(sources, dict):
        return [v for key, sub in sources.items() for v in values_of(sub, f"{path}.{key}")]
    if isinstance(sources, list):
        return [v for i, sub in enumerate(sources) for v in values_of(sub, f"{path}[{i}]")]
    return []
