"""Agent CLI event streams read for people and for the record.

`console.log` keeps the raw stream (the evidence). This module turns it into what a person reads
— assistant text as text, one line per tool call, errors marked, the final answer and a usage
line at the end — chunk by chunk while following (`Transcript`), and gives a provider the
answer, the error and every token class its vendor reports (`outcome`). What each vendor's
events mean lives in its own module (`domain/agents/<name>.py`), found through the registry
(`domain/agents/__init__.py`); the shapes and reason codes they share, in `domain/agents/stream.py`.

A line is hostile input: bounded in length, never trusted to be JSON; a line that is not one of
the CLIs' events is shown as it is, and nothing here raises on any bytes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any, Final

from lionrun.domain.agents import agent, owner
from lionrun.domain.agents.stream import AGENT_REASONS as AGENT_REASONS
from lionrun.domain.agents.stream import EMPTY_ANSWER as EMPTY_ANSWER
from lionrun.domain.agents.stream import (
    ERROR_MARK,
    RETRY_MARK,
    TOOL_MARK,
    WARNING_MARK,
    Beat,
    Outcome,
    as_number,
)
from lionrun.domain.agents.stream import IDLE_TIMEOUT as IDLE_TIMEOUT
from lionrun.domain.agents.stream import MAX_LINE as MAX_LINE
from lionrun.domain.agents.stream import PROVIDER_AUTH as PROVIDER_AUTH
from lionrun.domain.agents.stream import PROVIDER_ERROR as PROVIDER_ERROR
from lionrun.domain.agents.stream import PROVIDER_OVERLOADED as PROVIDER_OVERLOADED
from lionrun.domain.agents.stream import PROVIDER_RATE_LIMITED as PROVIDER_RATE_LIMITED
from lionrun.domain.agents.stream import PROVIDER_REFUSED as PROVIDER_REFUSED
from lionrun.domain.agents.stream import PROVIDER_UNREACHABLE as PROVIDER_UNREACHABLE
from lionrun.domain.agents.stream import clean as clean
from lionrun.domain.agents.stream import event_of as event_of
from lionrun.domain.agents.stream import reason_of as reason_of
from lionrun.domain.agents.stream import retry_delay as retry_delay

_PREFIX = re.compile(r"^\[([A-Za-z0-9][A-Za-z0-9._:-]{0,63})\] ")  # a shared console's leg prefix


def beats(event: dict[str, Any]) -> list[Beat]:
    """What one event shows a person (nothing for bookkeeping events such as init)."""
    vendor = owner(event)
    return agent(vendor).beats(event) if vendor is not None else []


# -- a provider's view of its stream -------------------------------------------------------------

def outcome(vendor: str, lines: Iterable[str]) -> Outcome:
    """The answer, error and usage of one CLI's whole stream (the lines its stdout gave)."""
    return agent(vendor).outcome([e for e in (event_of(line) for line in lines) if e is not None])


def end_reason(vendor: str, found: Outcome, exit_code: int) -> str | None:
    """Why the leg failed, from the stream's verdict and the CLI's exit status (None: it did not).

    An exit other than 0 is a failure whatever the stream said; some exits name their reason
    (the CLI's `exit_reason`: Gemini's 55 an untrusted folder, 41 authentication).
    """
    named = agent(vendor).exit_reason(found, exit_code)
    if named is not None:
        return named
    if found.is_error:
        return found.reason or PROVIDER_ERROR
    return PROVIDER_ERROR if exit_code != 0 else None


# -- rendering for people ------------------------------------------------------------------------

_USAGE_LABELS: Final = (
    ("input_tokens", "in"), ("cached_input_tokens", "cached in"), ("cache_read_input_tokens", "cache read"),
    ("cache_creation_input_tokens", "cache write"), ("output_tokens", "out"),
    ("reasoning_output_tokens", "reasoning"), ("thoughts_tokens", "thoughts"), ("tool_tokens", "tool"),
    ("total_tokens", "total"),
)


def usage_line(usage: dict[str, Any]) -> str:
    """`tokens: in 11 · cache read 3 · out 7 · cost $0.0123`: every reported token class, named."""
    parts = [f"{label} {usage[key]}" for key, label in _USAGE_LABELS if as_number(usage.get(key)) is not None]
    known = {key for key, _ in _USAGE_LABELS}
    parts += [f"{key.removesuffix('_tokens').replace('_', ' ')} {value}" for key, value in usage.items()
              if key.endswith("_tokens") and key not in known and as_number(value) is not None]
    cost = as_number(usage.get("cost_usd"))
    text = "tokens: " + " · ".join(parts) if parts else "tokens: not reported"
    return text + (f" · cost ${cost:.4f}" if cost is not None else "")


class _Leg:
    """What the transcript remembers of one leg's stream: its open text and what it last said."""

    def __init__(self) -> None:
        self.open = ""  # a prefixed leg's streamed text (Gemini deltas) held until a newline ends it
        self.mid_line = False  # an unprefixed stream's text was shown up to a line it has not ended
        self.last_text = ""
        self.last_error = ""  # the error last shown: the same failure said again is not repeated


class Transcript:
    """Bytes of a console in, text for a person out; fed chunk by chunk, it never raises.

    Whole lines are rendered as they complete (a partial last line waits for the next chunk or
    `close()`); a shared console's `[leg] ` prefix is kept on every line it renders. The usage
    line comes with the final event that carries it.
    """

    def __init__(self, max_line: int = MAX_LINE) -> None:
        self.max_line = max_line
        self._pending = b""
        self._dropping = 0  # bytes of an over-long line being skipped until its newline
        self._legs: dict[str, _Leg] = {}

    def feed(self, chunk: bytes) -> str:
        """Render whatever whole lines `chunk` completes."""
        return "".join(self._lines(chunk))

    def close(self) -> str:
        """Render the partial last line and end every leg's open text."""
        out = list(self._lines(b"\n")) if self._pending or self._dropping else []
        out.extend(self._end_text(prefix, leg) for prefix, leg in self._legs.items())
        return "".join(out)

    def _lines(self, chunk: bytes) -> Iterator[str]:
        data = self._pending + chunk
        self._pending = b""
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            if self._dropping:
                yield self._cut(self._dropping + end - start)
                self._dropping = 0
            elif end - start > self.max_line:
                yield self._cut(end - start)
            else:
                yield self._line(data[start:end + 1])
            start = end + 1
        rest = data[start:]
        if self._dropping:
            self._dropping += len(rest)
        elif len(rest) > self.max_line:
            self._dropping = len(rest)
        else:
            self._pending = rest

    def _cut(self, size: int) -> str:
        return f"[li: a console line of {size} bytes is too long to show; see --raw]\n"

    def _line(self, raw: bytes) -> str:
        line = raw.decode("utf-8", errors="replace")
        match = _PREFIX.match(line)
        prefix = match.group(0) if match else ""
        event = event_of(line[len(prefix):]) if line[len(prefix):].lstrip().startswith("{") else None
        if event is None or owner(event) is None:
            leg = self._legs.get(prefix)
            head = self._end_text(prefix, leg) if leg is not None else ""
            return head + line
        leg = self._legs.setdefault(prefix, _Leg())
        return "".join(self._show(prefix, leg, beat) for beat in beats(event))

    def _show(self, prefix: str, leg: _Leg, beat: Beat) -> str:
        if beat.kind == "delta":
            leg.last_text += beat.text
            if not prefix:  # one agent's stream: its words as they come, so following shows progress
                leg.mid_line = not beat.text.endswith("\n") if beat.text else leg.mid_line
                return beat.text
            leg.open += beat.text  # a shared console: whole lines only, each with its leg's prefix
            cut = leg.open.rfind("\n") + 1
            done, leg.open = leg.open[:cut], leg.open[cut:]
            return _prefixed(prefix, done)
        head = self._end_text(prefix, leg)
        if beat.kind == "usage":  # a final event carries it: the stream's last word
            return head + f"{prefix}{usage_line(beat.usage)}\n"
        if beat.kind == "text":
            leg.last_text = beat.text
            return head + _prefixed(prefix, _ended(beat.text))
        if beat.kind == "answer":
            if beat.text.strip() == leg.last_text.strip():
                return head
            leg.last_text = beat.text
            return head + f"{prefix}── answer ──\n" + _prefixed(prefix, _ended(beat.text))
        leg.last_text = ""
        if beat.kind == "error":  # a vendor says one failure in several events: shown once
            if beat.text == leg.last_error or (not beat.text and leg.last_error):
                return head
            leg.last_error = beat.text or "the run failed"
            return head + f"{prefix}{ERROR_MARK} {leg.last_error}\n"
        mark = {"tool": TOOL_MARK, "warning": WARNING_MARK, "retry": RETRY_MARK}.get(beat.kind, ERROR_MARK)
        return head + f"{prefix}{mark} {beat.text}\n"

    def _end_text(self, prefix: str, leg: _Leg | None) -> str:
        if leg is not None and leg.mid_line:
            leg.mid_line = False
            return "\n"
        if leg is None or not leg.open:
            return ""
        text, leg.open = leg.open, ""
        return _prefixed(prefix, text + "\n")


def render(data: bytes, max_line: int = MAX_LINE) -> str:
    """A whole console rendered for a person."""
    transcript = Transcript(max_line)
    return transcript.feed(data) + transcript.close()



# -- small helpers ------------------------------------------------------------------------------

def _prefixed(prefix: str, text: str) -> str:
    if not prefix or not text:
        return text
    return "".join(prefix + line for line in text.splitlines(keepends=True))


def _ended(text: str) -> str:
    return text if text.endswith("\n") or not text else text + "\n"
