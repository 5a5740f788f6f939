"""The pagination budget: recognising a "next page" / "load more" control."""

from __future__ import annotations

import re

from ...snapshot import parse_line

__all__ = ["is_pagination_control"]

_PAGINATION = re.compile(
    r"^(next( page| results?| »| ›|\s*[»›>→])?|[»›→]|>|load more.*|show more.*|more results|see more results"
    r"|view more.*|older (posts|entries)|page suivante|weiter|siguiente)$",
    re.IGNORECASE,
)


def is_pagination_control(line: str) -> bool:
    """Whether an outline line (``[0-12] link: Next page``) or an instruction names a "next
    page" / "load more" control: a link or button whose name is one of the usual labels."""
    text = line.strip()
    element = parse_line(text)
    if element is not None:
        if element.role not in ("link", "button"):
            return False
        text = element.name
    text = re.sub(r"^(click|press|tap|open)( on)?( the)?\s+", "", text.strip().strip("'\""), flags=re.IGNORECASE)
    text = re.sub(r"\s+(link|button)$", "", text, flags=re.IGNORECASE).strip()
    return bool(_PAGINATION.match(text))
