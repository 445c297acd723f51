"""Queues: a queue's settings, who may take a slot next, and when a paused queue opens.

A run submitted to a queue the store knows waits, `queued`, until it is the first of the queue's
live waiters (a higher `--priority` first; equal ones first come, first served by the
ticket submit took) and a slot is free; a queue
the store does not know has no limit and runs behave as they always did. Everything here is pure:
the stores keep the settings and hold the slots (a kernel lock, a database session lock), the
runner asks these functions what to do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Final, NoReturn

from lionrun.domain.vocabulary import (
    QUEUED as QUEUED,  # the status of a run whose runner waits for a slot
)

# The environment variable naming, in a queued run's runner, the descriptor that holds its place
# in line (the runner takes it out of its environment before anything else sees it).
QUEUE_FD: Final = "LI_QUEUE_FD"
DEFAULT_QUEUE: Final = "default"
PARALLEL_MAX: Final = 10_000
QUEUE_NAME_PATTERN: Final = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,62}$")
TICKET_DIGITS: Final = 12
ENTRY_PATTERN: Final = re.compile(r"^([0-9]{12})-(\d{8}T\d{6}-[0-9a-f]{6})(?:\.p(-?[0-9]{1,7}))?$")

# Why a queue is paused: by a person (`li queue pause`), or by itself after a run ended rate
# limited by its vendor (the reason code i24b's runs carry), until the vendor's reset time.
PAUSED_BY_PERSON: Final = "paused"
RATE_LIMITED: Final = "provider_rate_limited"
BACKOFF_SECONDS: Final = 60.0  # a rate limit that named no reset time pauses the queue this long
BACKOFF_MAX_SECONDS: Final = 6 * 3600.0  # a reset time further out than this is not believed
# A queue's token budget per window was spent; it opens when the window rolls.
BUDGET_SPENT: Final = "budget_exceeded"
WINDOW_MAX_SECONDS: Final = 366 * 24 * 3600.0


class QueueRefused(ValueError):
    """A queue name, limit or setting li does not accept; `argument` names what was wrong."""

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(message)
        self.argument = argument
        self.message = message


def check_queue_name(value: object, argument: str = "--queue") -> str:
    """The name when it is one a queue can have (lowercase letters, digits, `_ . -`, at most 63);
    else an `invalid_input` refusal naming `argument`."""
    if not isinstance(value, str) or QUEUE_NAME_PATTERN.fullmatch(value) is None:
        _refuse(argument, value, f"{str(value)[:80]!r} is not a queue name (lowercase letters, digits, '_', '.', "
                                 f"'-'; at most 63, starting with a letter or digit)")
    return value


def check_parallel(value: object) -> int:
    """A limit of 1 to PARALLEL_MAX works at once; else an `invalid_input` refusal."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= PARALLEL_MAX:
        _refuse("--parallel", value, f"--parallel must be an integer from 1 to {PARALLEL_MAX}, not {str(value)[:80]!r}")
    return value


def _refuse(argument: str, value: object, message: str) -> NoReturn:
    from lionrun.domain.contract import ContractError, ErrorKind

    raise ContractError(ErrorKind.INVALID_INPUT, message, {"argument": argument, "value": str(value)[:200]})


@dataclass(frozen=True, kw_only=True)
class QueueSettings:
    """What the store keeps of one queue: its limit (None: no limit) and whether it is paused.

    `paused` is a person's pause (until they resume); `paused_until` a pause that ends by itself
    (a vendor's rate-limit reset), `paused_reason` why, `paused_by` the run that caused it.
    """

    name: str
    parallel: int | None = None
    paused: bool = False
    paused_until: str | None = None
    paused_reason: str | None = None
    paused_by: str | None = None
    # At most `max_tokens` tokens per window of `per` seconds (None: no budget); the
    # window began at `window_start` (ISO; None: nothing spent yet) and `window_spent` were spent in it.
    max_tokens: int | None = None
    per: float | None = None
    window_start: str | None = None
    window_spent: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": 1, "name": self.name, "parallel": self.parallel, "paused": self.paused,
                "paused_until": self.paused_until, "paused_reason": self.paused_reason, "paused_by": self.paused_by,
                "max_tokens": self.max_tokens, "per": self.per, "window_start": self.window_start,
                "window_spent": self.window_spent}

    @classmethod
    def from_dict(cls, data: object) -> QueueSettings:
        """Settings read back from a store; anything malformed is QueueRefused (never half-believed)."""
        if not isinstance(data, dict) or data.get("schema_version", 1) != 1:
            raise QueueRefused("settings", "the queue's settings are not an object of a known schema")
        name, parallel = data.get("name"), data.get("parallel")
        texts = [data.get(k) for k in ("paused_until", "paused_reason", "paused_by")]
        if not isinstance(name, str) or QUEUE_NAME_PATTERN.fullmatch(name) is None:
            raise QueueRefused("settings", f"the queue's settings name {str(name)[:80]!r}, not a queue")
        if parallel is not None and (isinstance(parallel, bool) or not isinstance(parallel, int)
                                     or not 1 <= parallel <= PARALLEL_MAX):
            raise QueueRefused("settings", f"the queue's parallel {str(parallel)[:80]!r} is not a limit")
        if not isinstance(data.get("paused", False), bool) or not all(v is None or isinstance(v, str) for v in texts):
            raise QueueRefused("settings", "the queue's pause fields are malformed")
        until = texts[0]
        if until is not None and _moment(until) is None:
            raise QueueRefused("settings", f"the queue's paused_until {until!r} is not an ISO 8601 UTC time")
        budget = _budget_fields(data)
        return cls(name=name, parallel=parallel, paused=bool(data.get("paused", False)), paused_until=until,
                   paused_reason=texts[1], paused_by=texts[2], **budget)


def _budget_fields(data: dict[str, Any]) -> dict[str, Any]:
    """The budget fields of stored settings (absent in settings from before them)."""
    tokens, per, start, spent = (data.get(k) for k in ("max_tokens", "per", "window_start", "window_spent"))
    spent = 0 if spent is None else spent
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1):
        raise QueueRefused("settings", "the queue's max_tokens is not a number of tokens")
    if per is not None and (isinstance(per, bool) or not isinstance(per, int | float) or not 0 < per <= WINDOW_MAX_SECONDS):
        raise QueueRefused("settings", "the queue's per is not a window in seconds")
    if (tokens is None) != (per is None):
        raise QueueRefused("settings", "the queue's max_tokens and per go together")
    if start is not None and (not isinstance(start, str) or _moment(start) is None):
        raise QueueRefused("settings", "the queue's window_start is not an ISO 8601 UTC time")
    if isinstance(spent, bool) or not isinstance(spent, int) or spent < 0:
        raise QueueRefused("settings", "the queue's window_spent is not a number of tokens")
    return {"max_tokens": tokens, "per": None if per is None else float(per), "window_start": start,
            "window_spent": spent}


def settings_of(name: str, raw: str | bytes) -> QueueSettings:
    """The settings a store kept of queue `name`, from their JSON text: ValueError saying what is
    wrong when they are malformed or name another queue (the stores say it as QueueBroken)."""
    import json

    try:
        settings = QueueSettings.from_dict(json.loads(raw))
    except (ValueError, QueueRefused) as exc:
        raise ValueError(f"malformed: {exc}") from exc
    if settings.name != name:
        raise ValueError(f"names the queue {settings.name!r}")
    return settings


def _moment(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def pause_ends(settings: QueueSettings, now: datetime) -> datetime | None:
    """When a pause that ends by itself ends (None: no such pause, or it has passed)."""
    until = _moment(settings.paused_until)
    return until if until is not None and until > now else None


def is_paused(settings: QueueSettings | None, now: datetime) -> bool:
    """Paused by a person, or until a moment not yet come."""
    return settings is not None and (settings.paused or pause_ends(settings, now) is not None)


def pause_reason(settings: QueueSettings | None, now: datetime) -> str | None:
    """Why the queue does not start runs now (None when it is open)."""
    if settings is None:
        return None
    if settings.paused:
        return settings.paused_reason or PAUSED_BY_PERSON
    if pause_ends(settings, now) is not None:
        return settings.paused_reason or RATE_LIMITED
    return None


def set_parallel(settings: QueueSettings, parallel: int | None) -> QueueSettings:
    """The queue with a new limit (None: no limit)."""
    return replace(settings, parallel=None if parallel is None else check_parallel(parallel))


def pause(settings: QueueSettings, reason: str | None = None) -> QueueSettings:
    """A person's pause: until they resume."""
    return replace(settings, paused=True, paused_reason=reason or PAUSED_BY_PERSON, paused_by=None)


def resume(settings: QueueSettings) -> QueueSettings:
    """Open the queue again: a person's pause and a pause until a reset both end now."""
    return replace(settings, paused=False, paused_until=None, paused_reason=None, paused_by=None)


def rate_limited(settings: QueueSettings, run_id: str, retry_at: str | None, now: datetime,
                 backoff: float = BACKOFF_SECONDS) -> QueueSettings:
    """The queue paused by itself after `run_id` ended rate limited: until the vendor's reset time
    (`retry_at`, bounded by BACKOFF_MAX_SECONDS), else for `backoff` seconds; a later pause
    already set is kept, and a person's pause stays a person's."""
    reset = _moment(retry_at)
    ceiling = now + timedelta(seconds=BACKOFF_MAX_SECONDS)
    until = reset if reset is not None and now < reset <= ceiling else now + timedelta(seconds=backoff)
    known = pause_ends(settings, now)
    if known is not None and known >= until:
        return settings
    if settings.paused:
        return replace(settings, paused_until=until.isoformat(timespec="microseconds"))
    return replace(settings, paused_until=until.isoformat(timespec="microseconds"), paused_reason=RATE_LIMITED,
                   paused_by=run_id)


# --- a token budget per window ------------------------------------------------------

_UNITS: Final = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_window(text: object, argument: str = "--per") -> float:
    """`24h`, `30m`, `90s`, `7d` or a number of seconds: the length of a budget's window."""
    raw = str(text).strip().lower() if isinstance(text, str | int | float) and not isinstance(text, bool) else ""
    scale = _UNITS.get(raw[-1:], None) if raw else None
    number = raw[:-1] if scale is not None else raw
    try:
        seconds = float(number) * (scale or 1.0)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= WINDOW_MAX_SECONDS or seconds != seconds:
        _refuse(argument, text, f"{argument} must be a window such as 24h, 30m, 90s or 7d (at most 366d), "
                                f"not {str(text)[:80]!r}")
    return seconds


def set_budget(settings: QueueSettings, max_tokens: int | None, per: float | None) -> QueueSettings:
    """The queue with a token budget per window (None, None: none); the window starts afresh."""
    if (max_tokens is None) != (per is None):
        _refuse("--per", per, "a queue's budget takes both --max-tokens N and --per WINDOW")
    return replace(settings, max_tokens=max_tokens, per=per, window_start=None, window_spent=0)


def window_ends(settings: QueueSettings) -> datetime | None:
    """When the budget's current window ends (None: no budget, or nothing spent yet)."""
    start = _moment(settings.window_start)
    if start is None or settings.per is None:
        return None
    return start + timedelta(seconds=settings.per)


def window_spent(settings: QueueSettings, now: datetime) -> int:
    """Tokens spent in the window that holds `now` (0 once it rolled)."""
    ends = window_ends(settings)
    return settings.window_spent if ends is not None and now < ends else 0


def spent(settings: QueueSettings, run_id: str, tokens: int, now: datetime) -> QueueSettings:
    """The queue after `run_id` ended having spent `tokens`: counted in the current window (a new
    one starts when the last rolled); a window spent pauses the queue until it rolls, as a rate
    limit does (a later pause already set is kept, and a person's pause stays a person's)."""
    limit, per = settings.max_tokens, settings.per
    if limit is None or per is None or tokens <= 0:
        return settings
    ends = window_ends(settings)
    if ends is None or now >= ends:
        settings = replace(settings, window_start=now.isoformat(timespec="microseconds"), window_spent=0)
        ends = now + timedelta(seconds=per)
    settings = replace(settings, window_spent=settings.window_spent + tokens)
    if settings.window_spent < limit:
        return settings
    known = pause_ends(settings, now)
    if known is not None and known >= ends:
        return settings
    until = ends.isoformat(timespec="microseconds")
    if settings.paused:
        return replace(settings, paused_until=until)
    return replace(settings, paused_until=until, paused_reason=BUDGET_SPENT, paused_by=run_id)


# --- the waiting line: one entry per waiter, named by its ticket -------------------------------


def entry_name(ticket: int, run_id: str, priority: int = 0) -> str:
    """The name of a waiter's entry: its ticket (zero-padded, so names sort as tickets) and run id,
    and its priority when it has one other than 0."""
    if ticket < 0 or ticket >= 10**TICKET_DIGITS:
        raise ValueError(f"ticket {ticket} out of range")
    name = f"{ticket:0{TICKET_DIGITS}d}-{run_id}"
    return name if priority == 0 else f"{name}.p{priority}"


def parse_place(name: str) -> tuple[int, str, int] | None:
    """(ticket, run id, priority) of an entry name; None for anything else (a stray file is no waiter)."""
    match = ENTRY_PATTERN.fullmatch(name)
    if match is None:
        return None
    return int(match.group(1)), match.group(2), int(match.group(3) or 0)


def parse_entry(name: str) -> tuple[int, str] | None:
    """(ticket, run id) of an entry name; None for anything else (a stray file is no waiter)."""
    place = parse_place(name)
    return None if place is None else place[:2]


def places_of(names: list[str]) -> list[tuple[int, str, int]]:
    """The waiters an entry listing names, (ticket, run id, priority), in the order they start:
    higher priority first, then first come first (ticket), then run id."""
    from lionrun.domain.dependencies import line_order

    return line_order(place for place in map(parse_place, names) if place is not None)


def ahead_of(line: list[tuple[int, str]], run_id: str) -> list[tuple[int, str]]:
    """The waiters before `run_id` in `line` (as it starts), nearest first (the one to look at
    first for liveness)."""
    index = next((i for i, entry in enumerate(line) if entry[1] == run_id), None)
    if index is None:
        return []
    return list(reversed(line[:index]))


def position(line: list[tuple[int, str]], run_id: str) -> int | None:
    """1 for the next to start; None when `run_id` is not waiting."""
    index = next((i for i, entry in enumerate(line) if entry[1] == run_id), None)
    return None if index is None else index + 1


def next_ticket(previous: int | None) -> int:
    """The ticket after the last one given (0 for the first)."""
    return 0 if previous is None else previous + 1
