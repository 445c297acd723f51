"""Times for people, one style everywhere: local clock times, relative ages, and
durations `5s`, `3m12s`, `2h05m`, `3d04h`. Pure: the moment "now" is always given."""

from __future__ import annotations

from datetime import datetime


def moment(text: str | None) -> datetime | None:
    """An ISO 8601 time with an offset; None for anything else."""
    try:
        found = datetime.fromisoformat(text) if text else None
    except (TypeError, ValueError):
        return None
    return found if found is not None and found.tzinfo is not None else None


def duration(seconds: float) -> str:
    """`42s`, `3m07s`, `2h05m`, `3d04h`."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    if seconds < 86400:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 86400}d{seconds % 86400 // 3600:02d}h"


def age(seconds: float) -> str:
    """How long ago, coarsely: `42s`, `17m`, `5h`, `3d`."""
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h" if seconds < 172800 else f"{seconds // 86400}d"


def clock(at: datetime, now: datetime) -> str:
    """Local time: `14:03:27` today, else `12-01 14:03` (`2025-12-01 14:03` in another year)."""
    local, today = at.astimezone(), now.astimezone()
    if local.date() == today.date():
        return local.strftime("%H:%M:%S")
    return local.strftime("%m-%d %H:%M") if local.year == today.year else local.strftime("%Y-%m-%d %H:%M")
