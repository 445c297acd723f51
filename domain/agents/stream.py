"""What every agent CLI's stream is read into, and the words shared by their readers.

One module per CLI (`domain/agents/<name>.py`) turns its events into `Beat`s for people and its
whole stream into an `Outcome` for its provider; this module holds those two shapes, the reason
codes of a failed leg, the reading of a vendor's message into a reason and a delay, and the small
helpers that keep decoded JSON safe to show. A line is hostile input: bounded in length, never
trusted to be JSON, and nothing here raises on any bytes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from lionrun.domain.agents.reasons import AGENT_REASONS as AGENT_REASONS
from lionrun.domain.agents.reasons import EMPTY_ANSWER as EMPTY_ANSWER
from lionrun.domain.agents.reasons import IDLE_TIMEOUT as IDLE_TIMEOUT
from lionrun.domain.agents.reasons import PROVIDER_AUTH as PROVIDER_AUTH
from lionrun.domain.agents.reasons import PROVIDER_ERROR as PROVIDER_ERROR
from lionrun.domain.agents.reasons import PROVIDER_OVERLOADED as PROVIDER_OVERLOADED
from lionrun.domain.agents.reasons import PROVIDER_RATE_LIMITED as PROVIDER_RATE_LIMITED
from lionrun.domain.agents.reasons import PROVIDER_REFUSED as PROVIDER_REFUSED
from lionrun.domain.agents.reasons import PROVIDER_UNREACHABLE as PROVIDER_UNREACHABLE

MAX_LINE: Final = 1 << 20  # bytes of one event line that are parsed; a longer one is cut
ARG_WIDTH: Final = 160  # characters of a tool call's main argument on its line
ERROR_WIDTH: Final = 400  # characters of an error message on its line
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # never reach a terminal from decoded JSON
_MAIN_ARGUMENTS: Final = ("command", "cmd", "file_path", "path", "absolute_path", "dir_path", "pattern",
                          "url", "query", "description", "prompt")

TOOL_MARK: Final = "→"
ERROR_MARK: Final = "✗"
WARNING_MARK: Final = "!"
RETRY_MARK: Final = "↻"

@dataclass(frozen=True)
class Beat:
    """One thing a person should see: text, a tool call, an error, the answer or the usage."""

    kind: str  # text | delta | tool | error | warning | retry | answer | usage
    text: str = ""
    usage: dict[str, Any] = field(default_factory=dict)


@dataclass
class Outcome:
    """What a provider learns from its CLI's stream: the answer (only one the stream delivered,
    never an error's text), whether it failed and why (`reason`, one of AGENT_REASONS, with the
    vendor's message), when a rate limit resets, the session id, the usage."""

    answer: str | None = None
    is_error: bool = False
    usage: dict[str, Any] = field(default_factory=dict)
    ended: bool = False  # a final event (Claude `result`, Codex `turn.*`, Gemini `result`) was seen
    reason: str | None = None
    message: str | None = None
    retry_at: str | None = None  # ISO-8601 UTC, when the stream named the moment (or its own clock)
    retry_after: float | None = None  # seconds from the end, when it named only a delay
    session_id: str | None = None


# -- reading one line ----------------------------------------------------------------------------

def event_of(line: str) -> dict[str, Any] | None:
    """The line's JSON object with a string `type`, or None for anything else."""
    text = line.strip()
    if not text.startswith("{") or len(text) > MAX_LINE:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # json refuses a nesting deeper than the stack allows
        return None
    return value if isinstance(value, dict) and isinstance(value.get("type"), str) else None



# -- reason codes from a vendor's words --------------------------------------------------------

_STATUS = re.compile(r"(?<![\w./-])(40[0-9]|429|5[0-9]{2})(?![\w.:/-])")
_AUTH = re.compile(r"unauthori[sz]ed|unauthenticated|permission_denied|forbidden|invalid api key|incorrect api key|"
                   r"invalid authentication|authentication_failed|failed to authenticate|not allowed to sample|"
                   r"api key (?:is )?(?:missing|not valid|invalid)|no api key|billing_error", re.I)
_RATE = re.compile(r"too many requests|rate.?limit|quota|resource_exhausted|usage limit", re.I)
_UNREACHABLE = re.compile(r"connection ?refused|econnrefused|econnreset|enotfound|etimedout|eai_again|unable to connect|"
                          r"connection (?:to the api )?was lost|stream disconnected|connection failed|error sending request|"
                          r"waiting for network|fetch failed|incomplete json segment|network error|socket hang up", re.I)
_OVERLOADED = re.compile(r"overloaded|at capacity|high demand|internal (?:server )?error|server.side|"
                         r"service unavailable|\bunavailable\b|bad gateway|gateway timeout", re.I)


_EMPTY = re.compile(r"empty response|no text or thoughts", re.I)


def reason_of(status: int | None, message: str) -> str:
    """The reason code of a vendor's failure from its HTTP status (when the stream gave one) and
    its message: a key refused, a rate limit, an overload, an unreachable API, or the rest."""
    if status is None:
        found = _STATUS.search(message)
        status = int(found.group(1)) if found else None
    if status in (401, 403) or _AUTH.search(message):
        return PROVIDER_AUTH
    if status == 429 or _RATE.search(message):
        return PROVIDER_RATE_LIMITED
    if _UNREACHABLE.search(message):
        return PROVIDER_UNREACHABLE
    if (status is not None and status >= 500) or _OVERLOADED.search(message):
        return PROVIDER_OVERLOADED
    if _EMPTY.search(message):
        return EMPTY_ANSWER
    return PROVIDER_ERROR


_DELAY = re.compile(r"(?:retry|try again)\s+(?:in|after)\s+(\d+(?:\.\d+)?)\s*"
                    r"(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hours?)\b", re.I)
_UNIT: Final = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def retry_delay(message: str) -> float | None:
    """The delay a vendor's message asks for ("Please retry in 1.0s", "try again in 20 minutes")."""
    found = _DELAY.search(message)
    if found is None:
        return None
    unit = found.group(2).lower()
    scale = _UNIT["ms"] if unit.startswith("ms") or unit.startswith("milli") else _UNIT[unit[0]]
    return float(found.group(1)) * scale


def after(stamp: str, delay: float | None) -> str | None:
    """`stamp` (the event's own ISO time) plus `delay` seconds, as ISO-8601 UTC; None without either."""
    if delay is None or not stamp:
        return None
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return iso(moment.astimezone(UTC) + timedelta(seconds=delay))


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def clean(text: str) -> str:
    """Decoded text without control characters a terminal would act on (newlines and tabs stay)."""
    return _CONTROL.sub("", text.replace("\r\n", "\n"))


def oneline(text: str, width: int = ERROR_WIDTH) -> str:
    flat = " ".join(clean(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def tool_line(name: object, arguments: object) -> str:
    label = oneline(as_text(name) or "tool", 64)
    argument = _main_argument(arguments)
    return f"{label}  {argument}" if argument else label


def _main_argument(arguments: object) -> str:
    """The argument a person recognises a call by: its command, path, pattern, url or query."""
    if isinstance(arguments, str):
        return oneline(arguments, ARG_WIDTH)
    if not isinstance(arguments, dict) or not arguments:
        return ""
    for key in (*_MAIN_ARGUMENTS, *arguments):
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return oneline(value, ARG_WIDTH)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return oneline(" ".join(value), ARG_WIDTH)
    try:
        return oneline(json.dumps(arguments, sort_keys=True, default=str), ARG_WIDTH)
    except (ValueError, TypeError, RecursionError):
        return ""


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_text(value: object) -> str:
    return value if isinstance(value, str) else ""


def as_number(value: object) -> int | float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None
