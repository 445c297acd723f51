"""What a person's page groups runs by (`li serve`): what each run needs from them, decided by a rule.

A status the page does not know yet (a later steering state) is grouped by its shape, never left
out: a `waiting_<what>` status waits on a person's <what> (an approval) and needs them; a bare
`waiting` or `queued` waits on other runs or a slot; any other non-terminal status is working.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal, get_args

from lionrun.domain.partition import STOPPED_WITHOUT_END, UNRESOLVED_SPAWN

Group = Literal["needs_you", "working", "queued", "done"]
GROUPS: Final[tuple[Group, ...]] = get_args(Group)
NEEDS_YOU: Final = "needs_you"
WORKING: Final = "working"
QUEUED_GROUP: Final = "queued"
DONE: Final = "done"
GROUP_TITLES: Final[Mapping[Group, str]] = {"needs_you": "Needs you", "working": "Working",
                                            "queued": "Queued", "done": "Done"}

FINE_ENDS: Final = frozenset({"succeeded", "cancelled"})  # an end a person need not look at again
WAITING_ON_OTHERS: Final = frozenset({"queued", "waiting"})
FILTERS: Final = ("label", "queue", "host", "model")


def group_of(status: str | None, terminal: bool | None, outcome: str | None, bucket: str | None,
             queue_paused: bool = False) -> Group:
    """The group of one run. `bucket` is its D10 bucket (None: it could not be observed)."""
    if bucket is None or status is None:
        return NEEDS_YOU  # a record that cannot be read: a person has to look
    if terminal:
        return DONE if outcome in FINE_ENDS else NEEDS_YOU
    if bucket in (STOPPED_WITHOUT_END, UNRESOLVED_SPAWN):
        return NEEDS_YOU
    if status.startswith("waiting_"):
        return NEEDS_YOU  # waits on a person's <what>: an approval, an answer
    if status in WAITING_ON_OTHERS or status.startswith("queued"):
        return NEEDS_YOU if queue_paused else QUEUED_GROUP
    return WORKING


def matches(row: Mapping[str, object], chosen: Mapping[str, str]) -> bool:
    """A row passes the page's filters: each chosen one (label, queue, host, model) equal to the row's."""
    return all(not value or row.get(name) == value for name, value in chosen.items() if name in FILTERS)


def elapsed_words(seconds: float | None) -> str:
    """`3h 04m`, `4m 05s`, `12s`: how long a run has been going, for a person."""
    if seconds is None or seconds < 0:
        return ""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"
