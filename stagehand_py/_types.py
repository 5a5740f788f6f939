"""Public value types shared by every layer: actions, results and variables."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from ._secrets import Secret
from ._usage import Usage

__all__ = [
    "Action",
    "ActResult",
    "BlockedKind",
    "BlockedRequest",
    "ElementIdentity",
    "Repair",
    "SavedDownload",
    "ActionMethod",
    "VariableSpec",
    "VariableValue",
    "Variables",
]

#: Every method an :class:`Action` can name. ``arguments`` per method:
#:
#: - ``click``: optional ``["left" | "right" | "middle"]``; ``double_click``, ``hover``: none
#: - ``fill``: ``[text]`` (clears first); ``type``: ``[text]`` (key by key, appended after the
#:   current content)
#: - ``press``: ``[key]``, e.g. ``"Enter"`` or a chord ``"Control+A"``, on the target after
#:   focusing it
#: - ``select_option``: ``[label_or_value]`` on a native ``<select>`` (the label is tried
#:   first, then the value)
#: - ``check`` / ``uncheck``: none
#: - ``scroll_into_view``: none; ``scroll_to``: ``["50%"]`` of the scroll range;
#:   ``scroll_by``: ``[dx, dy]`` pixels; ``next_chunk`` / ``prev_chunk``: none (one client
#:   height). These scroll the target if it can scroll, else its nearest scrollable
#:   ancestor; ``<html>`` / ``<body>`` (or no scrollable ancestor) scroll the page
#: - ``drag_and_drop``: ``[target]``, an element id from the snapshot (e.g. ``"0-42"``) or a
#:   selector
#: - ``set_input_files``: one or more file paths
#:
#: Methods without arguments ignore empty strings (``[""]``); anything else that does not fit
#: these forms raises :class:`~stagehand_py.InvalidArgumentError` before the browser is touched.
ActionMethod: TypeAlias = Literal[
    "click",
    "double_click",
    "hover",
    "fill",
    "type",
    "press",
    "select_option",
    "check",
    "uncheck",
    "scroll_into_view",
    "scroll_to",
    "scroll_by",
    "next_chunk",
    "prev_chunk",
    "drag_and_drop",
    "set_input_files",
]


class Repair(BaseModel):
    """A model answer the page showed to be a near miss, and what the library did about it.

    The library corrects an answer only where the page makes the correction unambiguous (an
    ``<option>`` picked for ``select_option`` is its own ``<select>``; a link's name that exactly one
    link has is that link's id); otherwise it re-asks once with the valid choices. Either way the
    result says so here. ``answered`` and ``done`` carry placeholders, never variable values.
    """

    model_config = ConfigDict(frozen=True)

    #: What kind of near miss, e.g. ``"option_to_select"``, ``"not_editable"``, ``"unknown_option"``,
    #: ``"link_name_to_id"``, ``"value_not_on_page"``, ``"invented_placeholder"``.
    kind: str
    #: What the model answered, in words (``"select_option ['Germany'] on [0-12] option: Germany"``).
    answered: str
    #: What the library did instead (``"select_option ['Germany'] on [0-10] combobox: Country"``,
    #: ``"re-asked with the 3 editable elements"``, ``"left out field 'subtitle'"``).
    done: str
    #: ``"corrected"`` when the page decided it; ``"re-asked"`` when the model was asked again with
    #: the valid choices; ``"dropped"`` when a value was left out of extracted data.
    outcome: Literal["corrected", "re-asked", "dropped"] = "corrected"


class Action(BaseModel):
    """One thing to do to one element, as returned by ``observe()`` and run by ``act()``.

    ``selector`` is ``"xpath=<absolute xpath>"``; the XPath continues through iframes (the
    segment after an ``iframe[n]`` step is inside that frame's document) and through shadow
    roots (``//`` right after an element step enters that element's shadow root).
    ``arguments`` may hold ``%name%`` placeholders that ``act()`` fills from ``variables``
    only at execution time. ``missing_arguments`` names the placeholders ``observe()`` put
    where the instruction gave no value (``observe("fill the search box")`` gives
    ``fill ["%search%"]`` with ``missing_arguments=["search"]``): ``act()`` raises
    :class:`~stagehand_py.UnknownVariableError` until ``variables=`` gives them.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    selector: str = Field(description="'xpath=/html[1]/body[1]/...' locating exactly one element")
    description: str = Field(default="", description="What the element is and what the action does")
    method: str = Field(default="click", description="One of ActionMethod")
    arguments: list[str] = Field(default_factory=list, description="Method arguments; may hold %placeholders%")
    missing_arguments: list[str] = Field(
        default_factory=list,
        description="Placeholders observe() put where the instruction gave no value (e.g. the text to fill): "
        "act() needs variables= with these names, or an action with the value in its arguments",
    )
    #: Near misses in the model's answer that made this action (observe, act's planner): a
    #: correction the page decided (an ``<option>`` picked for ``select_option`` became its
    #: ``<select>``), or a re-ask whose second answer this action is. Empty for an action as given
    #: or replayed from the cache.
    repairs: list[Repair] = Field(default_factory=list)


class SavedDownload(BaseModel):
    """A file a page downloaded, saved by Stagehand (see ``Stagehand(downloads_dir=...)``)."""

    model_config = ConfigDict(frozen=True)

    #: Where the file is now (inside the downloads folder).
    path: str
    #: The name the site proposed (Content-Disposition or the link's ``download`` attribute).
    suggested_filename: str
    size: int
    sha256: str
    #: The URL the file came from.
    url: str


#: What a blocked request was: a navigation, a subresource or ``fetch``, a new tab, or a
#: speculative load (speculation rules).
BlockedKind: TypeAlias = Literal["navigation", "request", "popup", "speculation"]


class BlockedRequest(BaseModel):
    """A navigation, request or new tab stopped by ``allowed_domains``; ``kind="speculation"`` is a
    speculative load (speculation rules) to another host the page asked for, refused
    (``resource_type`` says which: ``prefetch``, ``prerender``, or ``speculation-rules header``
    with the rule set's address); see docs/security.md for the rule sets it cannot refuse."""

    model_config = ConfigDict(frozen=True)

    url: str
    kind: BlockedKind
    resource_type: str = ""


@dataclass(frozen=True)
class ElementIdentity:
    """Which element an action was chosen (or cached) on: its outline role and accessible name
    (never a value; names redacted like prompts)."""

    role: str
    name: str


class ActResult(BaseModel):
    """What ``act()`` did."""

    model_config = ConfigDict(frozen=True)

    success: bool
    message: str
    description: str = ""
    actions: list[Action] = Field(default_factory=list)
    #: True when the first try failed and the element was re-located by its description.
    healed: bool = False
    #: True when the action came from the action cache (no model call).
    cache_hit: bool = False
    #: Seconds spent waiting for the page to render what the instruction names, after the
    #: first read found nothing (0.0 when it was there at once, or the page stood still).
    waited: float = 0.0
    #: Model usage of this act() call (tokens, ``cost_usd``); zero for an Action run as given.
    usage: Usage = Field(default_factory=Usage)
    #: Files the action made the page download, saved in the downloads folder.
    downloads: list[SavedDownload] = Field(default_factory=list)
    #: What was sent to the page, in order (``"click on xpath=..."``): each entry may have taken
    #: effect, and none is ever sent twice by a self-heal.
    dispatched: list[str] = Field(default_factory=list)
    #: Near misses in the model's answer that the page corrected or that were re-asked, in order.
    repairs: list[Repair] = Field(default_factory=list)
    #: Per action of ``actions`` (same order), the element it ran on: role and accessible name as
    #: the outline showed it where the element was chosen (after a heal, the re-located one);
    #: None when unknown (an Action built by hand).
    elements: list[ElementIdentity | None] = Field(default_factory=list)


class VariableSpec(TypedDict, total=False):
    """A variable with a description the model may read (the value it never sees)."""

    value: str
    description: str


VariableValue: TypeAlias = "str | int | float | VariableSpec | Secret"
#: ``{"username": "ada", "password": {"value": "...", "description": "account password"}}``; a
#: :class:`~stagehand_py.Secret` binds a value to origins, or makes it a TOTP seed.
Variables: TypeAlias = "dict[str, str | int | float | VariableSpec | Secret]"
