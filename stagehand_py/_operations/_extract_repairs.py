"""What an extract's answer is checked against on the page: the page's words, and which fields ask
for words of the model's own.

- :class:`PageWords`: whether a string appears in the page's text, **normalised**: Unicode NFKC,
  case folded, thousands separators between digits dropped (``1,204``, ``1'204`` and
  ``1 204`` with a no-break space are ``1204``), and every run of characters that are not letters or digits read as one space
  (punctuation, symbols and line breaks alike: ``$9.99`` is ``9 99``, ``Herbert,  Frank`` is
  ``herbert frank``). A string is on the page when its normalised words are a run of the page's
  normalised words (the page's lines joined in page order, so a value spanning two consecutive
  lines is found). Not equated: other number formats (``1.204`` for ``1,204``, ``1.2k``),
  reordered or translated words, dates in another format.
- :func:`asks_for_words`: a field whose name, title or description asks for words not on the
  page (a summary, an explanation): its value is written, not read, so neither check applies and
  choice mode lets the model write it (reported as generated).
- :func:`repair`: the :class:`~stagehand_py.Repair` record of what was answered and what was done,
  with the value shortened (it is the model's text, never a variable's value: the model never
  sees one).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any, Literal

from .._types import Repair
from ..snapshot import parse_outline

__all__ = ["PageWords", "asks_for_words", "normalised_words", "repair"]

#: Field words that ask for the model's own words rather than the page's.
_OWN_WORDS = re.compile(
    r"\b(?:summar(?:y|ies|ise|ize|ised|ized|ising|izing)|tl;?dr|gist|synopsis|overview|paraphrase[sd]?|"
    r"explain(?:s|ed)?|explanation|reasoning|rationale|sentiment|translat(?:e|ed|ion)|in your own words)\b",
    re.IGNORECASE,
)
_THOUSANDS = re.compile(r"(?<=\d)[,\u202f\u00a0'_](?=\d{3}(?!\d))")
_WORD = re.compile(r"[^\W_]+")


def asks_for_words(key: str, node: dict[str, Any]) -> bool:
    """Whether the field ``key`` (schema ``node``) asks for words not on the page (see the module docstring)."""
    said = " ".join([key.replace("_", " "), str(node.get("title", "")), str(node.get("description", ""))])
    return bool(_OWN_WORDS.search(said))


def normalised_words(text: str) -> str:
    """``text`` as the on-page check compares it (see the module docstring): words joined by one space."""
    folded = unicodedata.normalize("NFKC", _THOUSANDS.sub("", text)).casefold()  # NFKC makes a no-break space a space
    return " ".join(_WORD.findall(folded))


class PageWords:
    """The words of a page's outline (names and values of its lines), to ask whether a string is on it.

    The outline a model reads has every variable's value replaced by its ``%name%``; ``redact``
    does the same to the string asked about, so a value the page shows is found either way.
    """

    def __init__(self, outline: str, redact: Callable[[str], str] = str) -> None:
        texts = []
        for element in parse_outline(outline):
            texts.append(element.name)
            if element.value:
                texts.append(element.value)
        self._words = f" {normalised_words(chr(10).join(texts))} "
        self._redact = redact

    def __contains__(self, text: object) -> bool:
        if not isinstance(text, str):
            return False
        words = normalised_words(self._redact(text))
        return not words or f" {words} " in self._words


_SHOWN = 80


def repair(kind: str, path: str, answered: str, done: str,
           outcome: Literal["corrected", "re-asked", "dropped"]) -> Repair:
    """A :class:`~stagehand_py.Repair` for the field at ``path`` (``data.x`` as the model answers
    it, said ``$.x``); ``answered`` is shortened to a readable length."""
    where = "$" + path.removeprefix("data")
    shown = answered if len(answered) <= _SHOWN else answered[: _SHOWN - 1] + "…"
    return Repair(kind=kind, answered=f"{where}: {shown}", done=done, outcome=outcome)
