"""``done`` is a claim, checked before it is reported.

The run keeps the pages it saw (:class:`PagesSeen`: each capture's outline, redacted, with the
step that read it) and the results of the caller's own tools. When the model calls ``done``,
:func:`check_claim` checks its claim without a model first:

- ``values``: every value of the output (and each quoted one of the message) is found in the
  text of a page the run saw, numbers however written (``1,234.50`` for ``1234.5``), an address
  as one the run visited or a page linked to; a count (a field ``count``, ``number_of_books``,
  ``book_count``...) only on the page the run ended on, as a count it states ("40 issues", "66
  results (200 total)") or as the rows of a table or items of a list when it states none, not as
  any digit a page shows; each value is recorded with the step whose page showed it;
- ``final_state``: a page the claim names (an output field ``title``/``heading``/``url``..., or
  a quoted title in the message) that the run did reach must be the page it ended on; a claim
  that is a message alone (a task that does something) must name only things the final page
  shows in its text (not a value the run typed into a field, nor a select's option);
  and no run is done on the browser's error page (a page that did not load);
- ``agreement``: a number the output reports must be one the run's claims stated, when their
  messages state any (a small model's "There are 3 books" beside ``{"count": 1}``: both cannot be
  true; nor does a later claim that keeps the 1 and drops the 3 settle it);

then, with ``self_check``, :func:`verdict` asks a model whether the final page shows the claim
(``expect``'s verdict, one short request in choice mode). The run (:mod:`._tool_calls`) gives a failed
claim one more turn and ends a run whose claim still fails as ``unverified``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import cached_property
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from .._errors import (
    AgentError,
    AuthenticationError,
    BadRequestError,
    LLMError,
    ModelRequestBlockedError,
    TestDoubleError,
)
from .._operations.expect import claim_verdict
from .._prompts import agent as P
from .._util import normalise_url
from ..snapshot import parse_outline
from ._types import DoneCheck, ValueRead

if TYPE_CHECKING:
    from ._run import Run

__all__ = ["PagesSeen", "check_claim", "verdict"]

#: Output fields (top level) that name the page the run says it reached.
_TITLE_FIELDS = {"title", "page_title", "heading", "page_heading", "page_name"}
_URL_FIELDS = {"url", "page_url", "current_url", "final_url"}
#: A string longer than this is free text (a summary): only the numbers in it are checked.
_FREE_TEXT_CHARS = 80
_FREE_TEXT_WORDS = 12
_OUTLINE_ID = re.compile(r"\[\d+-\d+\]")
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\d)")
_NUMERIC = re.compile(r"^\s*[$€£¥]?\s*([-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)\s*%?\s*$")
_QUOTED = re.compile(r"\"([^\"\n]{2,80})\"|“([^”\n]{2,80})”|‘([^’\n]{2,80})’|(?<![\w'])'([^'\n]{2,80})'(?![\w'])")
#: "the title is 'X'", "heading: "X"", "the page called 'X'": the message names the page it reached.
_TITLE_IN_MESSAGE = re.compile(r"\b(?:title|heading|page)\b[^\"“‘'\n]{0,30}[\"“‘']([^\"”’'\n]{2,120})[\"”’']", re.IGNORECASE)
_URL = re.compile(r"^https?://\S+$")
#: Where Chromium shows a page that did not load (no answer, refused, blocked by the guard).
_ERROR_PAGE = "chrome-error:"
_DATA_ROWS = {"row"}
_CELLS = {"cell", "gridcell"}
_TABLES = {"table", "grid", "treegrid"}
_LISTS = {"list", "listbox"}
_ITEMS = {"listitem", "option"}
#: The choices a control offers: on a form left unsaved they hold every name the claim could use.
_OFFERED = {"option"}
#: An output field that is a count ("count", "number_of_books", "book_count", "how_many"): its value
#: must be a count the page states or the rows of a table, not any number the page shows.
_COUNT_FIELD = re.compile(r"^(?:count|how_many|number|total_count|(?:num|number|count)_of_\w+|num_\w+|\w+_count)$")
_INTEGER = r"(\d{1,3}(?:,\d{3})+|\d+)"
#: A count the page states, on one line of it: "40 issues", "8 open issues", "1 row", "66 results
#: (200 total)", "1-100 of 200", "Total: 12".
_STATED_COUNT = re.compile(
    rf"(?<![\w.,-]){_INTEGER}\s+(?:[a-z][\w'-]*\s+)?(?:[a-z][\w'-]+s|row|result|item|match|record|entry|hit)\b"
    rf"|(?<![\w.,-]){_INTEGER}\s+total\b|\b(?:of|total:?)\s+{_INTEGER}(?![\w.,])")


def _plain(text: str) -> str:
    """Text for matching: the outline's ids out, case and spacing folded."""
    return " ".join(_OUTLINE_ID.sub(" ", text).casefold().split())


def _number(text: str) -> Decimal | None:
    try:
        return Decimal(text.replace(",", "")).normalize()
    except InvalidOperation:
        return None


def _numbers(text: str) -> set[Decimal]:
    found = (_number(m.group(0)) for m in _NUMBER.finditer(_OUTLINE_ID.sub(" ", text)))
    return {n for n in found if n is not None}


def _stated_counts(text: str) -> set[Decimal]:
    """The counts the page states, line by line (a table's cell "3" above a "row" is none)."""
    counts: set[Decimal] = set()
    for line in _OUTLINE_ID.sub(" ", text).casefold().splitlines():
        for match in _STATED_COUNT.finditer(line):
            number = _number(next(g for g in match.groups() if g))
            if number is not None:
                counts.add(number)
    return counts


def _counts(outline: str) -> set[Decimal]:
    """The number of data rows of each table and of items of each list on the page."""
    elements = parse_outline(outline)
    counts: set[Decimal] = set()
    for index, element in enumerate(elements):
        if element.role not in _TABLES and element.role not in _LISTS:
            continue
        rows = 0
        inner = index + 1
        while inner < len(elements) and elements[inner].depth > element.depth:
            child = elements[inner]
            if element.role in _TABLES and child.role in _DATA_ROWS:
                cells = inner + 1
                if cells < len(elements) and elements[cells].depth > child.depth and elements[cells].role in _CELLS:
                    rows += 1
            elif element.role in _LISTS and child.role in _ITEMS and child.depth == element.depth + 1:
                rows += 1
            inner += 1
        if rows:
            counts.add(Decimal(rows))
    return counts


@dataclass
class _Page:
    """One page state the run saw: its outline (redacted) and the steps that began on it."""

    url: str
    title: str
    text: str
    links: tuple[str, ...]
    steps: list[int] = field(default_factory=list)

    @cached_property
    def plain(self) -> str:
        return _plain(f"{self.title}\n{self.text}")

    @cached_property
    def numbers(self) -> set[Decimal]:
        return _numbers(f"{self.title}\n{self.text}")

    @cached_property
    def counts(self) -> set[Decimal]:
        return _counts(self.text)

    @cached_property
    def stated_counts(self) -> set[Decimal]:
        return _stated_counts(f"{self.title}\n{self.text}")

    @cached_property
    def addresses(self) -> set[str]:
        return {normalise_url(u) for u in (self.url, *self.links) if u}

    @cached_property
    def shown(self) -> str:
        """What the page shows of itself: its text without its form fields' values and its selects'
        options (what the run typed, or could pick, is no sign that anything was saved)."""
        lines = (f"{e.role}: {e.name}" for e in parse_outline(self.text) if e.role not in _OFFERED)
        return _plain("\n".join([self.title, *lines]))

    @cached_property
    def names(self) -> list[str]:
        """What the page is called: its title and its headings."""
        return [n for n in [self.title, *(e.name for e in parse_outline(self.text) if e.role == "heading")] if n.strip()]


@dataclass
class _ToolResult:
    step: int
    text: str

    @cached_property
    def plain(self) -> str:
        return _plain(self.text)

    @cached_property
    def numbers(self) -> set[Decimal]:
        return _numbers(self.text)


class PagesSeen:
    """The pages a run saw, one entry per page state, in the order last seen; and the results of
    the caller's own tools (a value a tool returned was read too)."""

    def __init__(self) -> None:
        self._pages: dict[str, _Page] = {}
        self._tools: list[_ToolResult] = []

    def record(self, step: int, *, signature: str, url: str, title: str, text: str, links: Sequence[str] = ()) -> None:
        page = self._pages.pop(signature, None) or _Page(url, title, text, tuple(links))
        page.steps.append(step)
        self._pages[signature] = page  # last: the order is the order last seen

    def tool_result(self, step: int, text: str) -> None:
        self._tools.append(_ToolResult(step, text))

    @property
    def final(self) -> _Page | None:
        return next(reversed(self._pages.values()), None)

    def find(self, value: str, number: Decimal | None, *, count: bool = False) -> tuple[str, int, str] | None:
        """How, at which step and on which page ``value`` was read (the latest), or None. A
        ``count`` is read only on the final page, as a count it states, or as the rows of a table
        when it states none (a page that says "200 books" above 100 rows shows 200 of them, not 100)."""
        pages = list(reversed(self._pages.values()))
        if count and number is not None:
            # Read on the page the run ended on: a count is of what that page shows (the filter
            # applied, the record opened); another page's "12 rows" counts something else.
            counted: list[tuple[str, Callable[[_Page], bool]]] = [
                ("text", lambda p: number in p.stated_counts),
                ("row count", lambda p: not p.stated_counts and number in p.counts),
            ]
            return self._first(pages[:1], counted, None, number)
        wanted = _plain(value)
        # Whole words: "3" is not in "2024-03-16", "Ann" not in "Anne".
        pattern = re.compile(rf"(?<!\w){re.escape(wanted)}(?!\w)") if wanted else None
        looks: list[tuple[str, Callable[[_Page], bool]]] = [
            ("text", lambda p: pattern is not None and pattern.search(p.plain) is not None),
            ("number", lambda p: number is not None and number in p.numbers),
            ("row count", lambda p: number is not None and number in p.counts),
            ("address", lambda p: bool(_URL.match(value.strip())) and normalise_url(value.strip()) in p.addresses),
        ]
        return self._first(pages, looks, pattern, number)

    def _first(self, pages: list[_Page], looks: list[tuple[str, Callable[[_Page], bool]]],
               pattern: re.Pattern[str] | None, number: Decimal | None) -> tuple[str, int, str] | None:
        for how, test in looks:
            page = next((p for p in pages if test(p)), None)
            if page is not None:
                return how, page.steps[-1], page.url
        for result in reversed(self._tools):
            if (pattern is not None and pattern.search(result.plain)) or (number is not None and number in result.numbers):
                return "tool", result.step, ""
        return None

    def naming(self, claim: str, kind: str) -> list[_Page]:
        """The pages the run saw that ``claim`` names: by title or heading, or by address."""
        if kind == "url":
            address = normalise_url(claim.strip())
            return [p for p in self._pages.values() if normalise_url(p.url) == address]
        return [p for p in self._pages.values() if any(_same_name(claim, n) for n in p.names)]


def _same_name(claim: str, name: str) -> bool:
    """A claimed title names a page whose title or heading is it, or holds it, or is held by it
    (most of it: "Crash number 15" names "Crash number 15 - Tracker")."""
    a, b = _plain(claim), _plain(name)
    if not a or not b:
        return False
    short, long = sorted((a, b), key=len)
    return short == long or (short in long and len(short) >= len(long) / 2)


# --- the checks --------------------------------------------------------------------------------


def _leaves(value: Any, path: str = "$") -> Iterator[tuple[str, Any]]:
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, Mapping):
        for key, inner in value.items():
            yield from _leaves(inner, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for index, inner in enumerate(value):
            yield from _leaves(inner, f"{path}[{index}]")
    else:
        yield path, value


def _quoted(message: str) -> list[str]:
    return [next(g for g in m.groups() if g) for m in _QUOTED.finditer(message)]


def _is_count(path: str) -> bool:
    """An output field that holds a count (``$.count``, ``$.book_count``; not a list's items)."""
    name = path.rsplit(".", 1)[-1].casefold() if path.startswith("$.") and "[" not in path else ""
    return _COUNT_FIELD.match(name) is not None


def _read(pages: PagesSeen, value: str, path: str, number: Decimal | None) -> ValueRead:
    found = pages.find(value, number, count=_is_count(path))
    if found is None:
        return ValueRead(value=value, field=path, how="missing")
    how, step, url = found
    return ValueRead(value=value, field=path, how=how, step=step, url=url)  # type: ignore[arg-type]


def _values(pages: PagesSeen, output: Any, message: str) -> tuple[list[ValueRead], int]:
    """Each value of the claim and where it was read; and how many could not be checked
    (yes/no answers, free text without numbers)."""
    reads: list[ValueRead] = []
    unchecked = 0
    leaves = [(path, leaf) for path, leaf in _leaves(output)] + [("message", q) for q in _quoted(message)]
    for path, leaf in leaves:
        if leaf is None or isinstance(leaf, bool) or (isinstance(leaf, str) and not leaf.strip()):
            unchecked += leaf is not None
            continue
        text = leaf if isinstance(leaf, str) else json.dumps(leaf)
        number = _numeric(leaf)
        if number is not None or not isinstance(leaf, str):
            reads.append(_read(pages, text, path, number))
            continue
        if len(text) > _FREE_TEXT_CHARS or len(text.split()) > _FREE_TEXT_WORDS:
            whole = _read(pages, text, path, None)
            if whole.how != "missing":
                reads.append(whole)
                continue
            numbers = [m.group(0) for m in _NUMBER.finditer(text)]
            unchecked += not numbers
            reads.extend(_read(pages, n, path, _number(n)) for n in numbers)
            continue
        reads.append(_read(pages, text, path, None))
    return reads, unchecked


def _claims_of_pages(output: Any, message: str) -> list[tuple[str, str, str]]:
    """(where, kind, value): the pages the claim says it reached."""
    claims: list[tuple[str, str, str]] = []
    data = output.model_dump(mode="json") if isinstance(output, BaseModel) else output
    if isinstance(data, Mapping):
        for key, value in data.items():
            name = str(key).casefold()
            if isinstance(value, str) and value.strip() and name in _TITLE_FIELDS | _URL_FIELDS:
                claims.append((f"$.{key}", "url" if name in _URL_FIELDS else "title", value))
    claims.extend(("message", "title", m.group(1)) for m in _TITLE_IN_MESSAGE.finditer(message))
    return claims


def check_claim(run: Run, message: str, output: Any, *, schema: bool) -> list[DoneCheck]:
    """The model-free checks of a ``done`` claim (its output already fits its schema)."""
    pages: PagesSeen = run.pages_seen
    step = run.step
    checks = [DoneCheck(check="schema", step=step, passed=True if schema else None,
                        detail="the output fits the output schema" if schema else "no output schema was given")]
    reads, unchecked = _values(pages, output, message)
    missing = [r for r in reads if r.how == "missing"]
    note = f"; {unchecked} value(s) not checkable (yes/no, free text without numbers)" if unchecked else ""
    if not reads:
        checks.append(DoneCheck(check="values", step=step, passed=None, detail="the claim reports no value to look for" + note))
    elif missing:
        shown = ", ".join(f"{r.value[:60]!r} ({r.field})" for r in missing[:5])
        counts = ("; a count is read on the page the run ends on, where it states it (\"N rows\", \"N results\") "
                  "or as the rows of a table when it states none" if any(_is_count(r.field) for r in missing) else "")
        checks.append(DoneCheck(check="values", step=step, passed=False, values=reads,
                                detail=f"not on any page the run saw: {shown}" + counts + note))
    else:
        checks.append(DoneCheck(check="values", step=step, passed=True, values=reads,
                                detail=f"all {len(reads)} value(s) found on pages the run saw" + note))
    checks.append(_final_state(pages, output, message, step))
    checks.append(_agreement(output, "\n".join(run.claim_messages or [message]), step))
    return checks


def _agreement(output: Any, message: str, step: int) -> DoneCheck:
    """The output's numbers against the ones ``message`` states (the messages of the run's claims):
    a claim that says two things is not checked further."""
    stated = _numbers(message)
    reported = [(path, number) for path, leaf in _scalars(output) if (number := _numeric(leaf)) is not None]
    if not stated or not reported:
        return DoneCheck(check="agreement", step=step, passed=None,
                         detail="the output or the message states no number to compare")
    differing = [(path, number) for path, number in reported if number not in stated]
    if not differing:
        return DoneCheck(check="agreement", step=step, passed=True,
                         detail="every number of the output is one the message states")
    said = ", ".join(f"{n:f}" for n in sorted(stated))[:80]  # f: 40, not the normalised 4E+1
    shown = ", ".join(f"{path} = {number:f}" for path, number in differing[:5])
    return DoneCheck(check="agreement", step=step, passed=False,
                     detail=f"the output says {shown}, but the run's messages state {said}")


def _scalars(output: Any) -> list[tuple[str, Any]]:
    """The output's own answers: the output itself when it is one value, or its top-level fields
    that are one value (a count, a total), not the values inside its lists of records ("4 products"
    beside four prices is no disagreement)."""
    data = output.model_dump(mode="json") if isinstance(output, BaseModel) else output
    if isinstance(data, Mapping):
        return [(f"$.{key}", value) for key, value in data.items() if not isinstance(value, Mapping | list | tuple)]
    return [] if isinstance(data, list | tuple) else [("$", data)]


def _numeric(leaf: Any) -> Decimal | None:
    """A number the output reports: an int or float, or a string that is only a number."""
    if isinstance(leaf, bool) or leaf is None:
        return None
    if isinstance(leaf, int | float):
        return _number(json.dumps(leaf))
    match = _NUMERIC.match(leaf) if isinstance(leaf, str) else None
    return _number(match.group(1)) if match is not None else None


def _final_state(pages: PagesSeen, output: Any, message: str, step: int) -> DoneCheck:
    final = pages.final
    if final is not None and final.url.startswith(_ERROR_PAGE):
        # The browser's own error page (a host that did not answer, a request refused): whatever the
        # claim says, the page the run ended on shows none of it.
        return DoneCheck(check="final_state", step=step, passed=False, evidence=final.url,
                         detail=f"the run ended on a page that did not load ({final.url}): go back to a page that "
                                "shows the answer before calling done")
    claims = [(where, kind, value) for where, kind, value in _claims_of_pages(output, message) if pages.naming(value, kind)]
    if final is not None and not claims and output is None:
        return _message_on_final_page(final, message, step)
    if final is None or not claims:
        return DoneCheck(check="final_state", step=step, passed=None, detail="the claim names no page the run reached")
    for where, kind, value in claims:
        if final not in pages.naming(value, kind):
            reached = pages.naming(value, kind)[-1]
            return DoneCheck(
                check="final_state", step=step, passed=False, evidence=f"{final.title} ({final.url})",
                detail=(f"the claim ({where}) names the page {value[:80]!r}, seen at step {reached.steps[-1]} "
                        f"({reached.url}), but the run ended on {final.title[:80]!r} ({final.url})"))
    where, kind, value = claims[0]
    return DoneCheck(check="final_state", step=step, passed=True, evidence=f"{final.title} ({final.url})",
                     detail=f"the run ended on the page the claim names ({value[:80]!r})")


def _message_on_final_page(final: _Page, message: str, step: int) -> DoneCheck:
    """A claim that is its message alone (a task that does something: "add the book Harbor Lights by
    Mary Shelley"): the page the run ended on must show every thing the message names, in its text,
    not as a field's value or a select's option (a list page with other books by Mary Shelley and a
    Travel filter does not show that Harbor Lights was added). A record that was saved shows its name on the
    next page; a form left unsaved (its fields still holding what the run typed), or a page reached
    after giving up, shows none of them."""
    names = _names(message)
    if not names:
        return DoneCheck(check="final_state", step=step, passed=None, detail="the claim names no page or thing to look for")
    unshown = [n for n in names if not _shown_on(final, n)]
    if not unshown:
        return DoneCheck(check="final_state", step=step, passed=True, evidence=f"{final.title} ({final.url})",
                         detail=f"the page the run ended on shows {', '.join(repr(n) for n in names[:6])} of the claim")
    return DoneCheck(check="final_state", step=step, passed=False, evidence=f"{final.title} ({final.url})",
                     detail=(f"the claim names {', '.join(repr(n) for n in names[:6])}, and the page the run ended on "
                             f"({final.title[:80]!r}, {final.url}) does not show {', '.join(repr(n) for n in unshown[:6])}"))


#: A name inside a sentence: capitalised words, as one ("Mary Shelley", "Poetry"), not the word that
#: starts the sentence.
_NAME = re.compile(r"(?<=[\w,;:)] )[A-Z][\w'’-]{2,}(?: [A-Z][\w'’-]*)*")


def _names(message: str) -> list[str]:
    """What a message names: its quoted parts and the capitalised words inside its sentences (not
    its numbers: an element id, a date written another way, a count are no name of the page)."""
    found = [*_quoted(message), *_NAME.findall(message)]
    return list(dict.fromkeys(n for n in found if n.strip()))


def _shown_on(page: _Page, name: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(_plain(name))}(?!\w)", page.shown) is not None


async def verdict(run: Run, message: str, output: Any) -> DoneCheck:
    """``self_check``: a model's verdict on the final page, through ``expect`` (one request; in
    choice mode a short one). A model that cannot be used at all ends the run with an
    :class:`AgentError`; any other failure of the request is recorded, and does not decide."""
    final = run.pages_seen.final
    claim = P.done_claim(run.instruction, message, _shown(output))
    try:
        result = await claim_verdict(run.client, claim, final.text if final is not None else "",
                                     url=final.url if final is not None else "", budget=run.config.max_outline_tokens,
                                     secrets=run.variables.secret_values(), purpose="agent_verdict")
    except (AuthenticationError, BadRequestError, ModelRequestBlockedError, TestDoubleError) as exc:
        raise AgentError(f"the agent's model cannot be used: {type(exc).__name__}: {exc}") from exc
    except LLMError as exc:
        return DoneCheck(check="verdict", step=run.step, passed=None,
                         detail=f"the verdict could not be had: {type(exc).__name__}: {run.redact(str(exc))[:200]}")
    run.usage = run.usage + result.usage
    shown = run.redact(result.evidence)
    said = f"the page shows it ({shown!r})" if shown else "no line of the page shows it"
    return DoneCheck(check="verdict", step=run.step, passed=result.passed, evidence=shown,
                     detail=f"{'yes' if result.passed else 'no'}: {said}")


def _shown(output: Any) -> str:
    """The output as the verdict's claim shows it: short ``key: value`` pairs."""
    if output is None:
        return ""
    data = output.model_dump(mode="json") if isinstance(output, BaseModel) else output
    text = ", ".join(f"{k}: {v}" for k, v in data.items()) if isinstance(data, Mapping) else json.dumps(data, default=str)
    return text[:300]
