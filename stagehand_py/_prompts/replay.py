"""Words the agent's model reads when a recorded run of its task stopped replaying part-way."""

from __future__ import annotations

__all__ = ["replay_fallback_notice"]


def replay_fallback_notice(replayed: int, total: int, stopped: int | None) -> str:
    """The notice a live run gets after a replay that could not finish: how far it got. No page
    text: what the page shows now, the model reads in the outline, fenced."""
    where = (f"step {stopped} of {total} no longer fits the page" if stopped is not None
             else "the data the page shows changed since it was recorded")
    return (f"A recorded run of this task was replayed first: {replayed} of its {total} steps ran, then it stopped "
            f"because {where}. The page is where the replay left it; continue the task from here, without "
            "repeating what is already done.")
