"""OpenCode: `opencode run --format json [--model PROVIDER/MODEL] [EXTRA]`, the prompt on stdin.

`run` reads piped stdin as the message when no message is given. `--format json` writes one JSON
event a line, each with the session's `sessionID`: `step_start`, `text` (a finished text part),
`tool_use` (a finished tool call, its `state` says how it ended), `reasoning`, `step_finish`
(the step's tokens and cost, and why it ended: `stop` for the last, `tool-calls` before a tool
ran, `unknown` when the model's stream broke) and `error` (`error.name`, `error.data.message`, the HTTP `statusCode` when the API gave
one). The answer is the text of the last step; the run ended when a step finished for good or
an error was said. It resumes a session with `--session ID`; `--auto` approves every permission
not explicitly denied (li's `full`, the one mode it has a flag for).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from lionrun.domain.agents import AgentCli, DoctorProbe
from lionrun.domain.agents.spend import Report, price, usage_tokens
from lionrun.domain.agents.stream import (
    EMPTY_ANSWER,
    PROVIDER_ERROR,
    Beat,
    Outcome,
    as_dict,
    as_number,
    as_text,
    clean,
    oneline,
    reason_of,
    retry_delay,
    tool_line,
)

NAME: Final = "opencode"
TYPES: Final = frozenset({"step_start", "text", "reasoning", "tool_use", "step_finish", "error"})
# Only `full` has a headless flag: its default run and its `plan` agent both ran the shell tool
# against the stub (recorded: tool_refused), so li refuses the other modes for it.
PERMISSION_FLAGS: Final = {"full": ("--auto",)}
_TOKENS: Final = {"input": "input_tokens", "output": "output_tokens", "reasoning": "reasoning_output_tokens",
                  "total": "total_tokens"}
_CACHE: Final = {"read": "cache_read_input_tokens", "write": "cache_creation_input_tokens"}
# A step that ended so is no end of the run: a tool ran (another step follows), or the model's
# stream broke before it said why it stopped (OpenCode then tries again, for ever).
_NOT_THE_END: Final = frozenset({"tool-calls", "unknown"})


def arguments(model: str | None, extra: Sequence[str] = ()) -> list[str]:
    return ["run", "--format", "json", *(["--model", model] if model else []), *extra]


def owns(event: dict[str, Any]) -> bool:
    """Its events: every one carries the session's `sessionID` (no other CLI's event does)."""
    return event["type"] in TYPES and isinstance(event.get("sessionID"), str)


# -- for people ----------------------------------------------------------------------------------

def beats(event: dict[str, Any]) -> list[Beat]:
    kind, part = event["type"], as_dict(event.get("part"))
    if kind == "text" and isinstance(part.get("text"), str):
        return [Beat("text", clean(part["text"]))]
    if kind == "tool_use":
        return _tool(part)
    if kind == "error":
        return [Beat("error", oneline(_error_message(event) or "error"))]
    if kind == "step_finish" and part.get("reason") not in _NOT_THE_END:
        usage = opencode_usage([event])
        return [Beat("usage", usage=usage)] if usage else []
    return []


def _tool(part: dict[str, Any]) -> list[Beat]:
    state = as_dict(part.get("state"))
    found = [Beat("tool", tool_line(part.get("tool"), state.get("input")))]
    if state.get("status") == "error":
        found.append(Beat("error", oneline(f"{as_text(part.get('tool')) or 'tool'} failed: "
                                           f"{as_text(state.get('error'))}")))
    return found


def opencode_usage(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Every token class and the cost of its steps (`step_finish`), summed over steps."""
    usage: dict[str, Any] = {}

    def add(name: str, value: object) -> None:
        number = as_number(value)
        if number is not None:
            usage[name] = usage.get(name, 0) + number

    for event in events:
        part = as_dict(event.get("part"))
        if event["type"] != "step_finish":
            continue
        tokens = as_dict(part.get("tokens"))
        for key, name in _TOKENS.items():
            add(name, tokens.get(key))
        for key, name in _CACHE.items():
            add(name, as_dict(tokens.get("cache")).get(key))
        add("cost_usd", part.get("cost"))
    return usage


# -- for its provider ----------------------------------------------------------------------------

def outcome(events: list[dict[str, Any]]) -> Outcome:
    """An `error` event fails the run (OpenCode gave up after its own retries); else the last
    step's end decides: its text is the answer, none is an empty answer, no end a broken stream."""
    session = next((as_text(e.get("sessionID")) for e in events if as_text(e.get("sessionID"))), None)
    usage = opencode_usage(events)
    errors = [e for e in events if e["type"] == "error"]
    if errors:
        message = _error_message(errors[-1]) or "the run failed"
        status = as_number(as_dict(as_dict(errors[-1].get("error")).get("data")).get("statusCode"))
        return Outcome(None, True, usage, True, reason=reason_of(int(status) if status is not None else None, message),
                       message=message, retry_after=_retry_after(errors[-1]) or retry_delay(message), session_id=session)
    finishes = [e for e in events if e["type"] == "step_finish"]
    if not finishes or as_dict(finishes[-1].get("part")).get("reason") in _NOT_THE_END:
        return Outcome(None, True, usage, False, reason=PROVIDER_ERROR,
                       message="the stream ended before its last step did", session_id=session)
    answer = "".join(as_text(as_dict(e.get("part")).get("text")) for e in _last_step(events) if e["type"] == "text")
    if not answer.strip():
        return Outcome(None, True, usage, True, reason=EMPTY_ANSWER, message="the last step gave no answer",
                       session_id=session)
    return Outcome(answer, False, usage, True, session_id=session)


def _last_step(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    starts = [i for i, e in enumerate(events) if e["type"] == "step_start"]
    return events[starts[-1]:] if starts else events


def _error_message(event: dict[str, Any]) -> str:
    """`APIError: invalid x-api-key`: the error's name (unless a generic one) and its message."""
    error = as_dict(event.get("error"))
    message = as_text(as_dict(error.get("data")).get("message")) or as_text(error.get("message"))
    name = as_text(error.get("name"))
    return ": ".join(t for t in (name if name not in ("", "UnknownError") else "", message) if t)


def _retry_after(event: dict[str, Any]) -> float | None:
    """The API's `retry-after` header (seconds), when the error carries the response's headers."""
    headers = as_dict(as_dict(as_dict(event.get("error")).get("data")).get("responseHeaders"))
    try:
        delay = float(as_text(headers.get("retry-after")))
    except ValueError:
        return None
    return delay if 0 <= delay < 1e7 else None


# -- for a budget --------------------------------------------------------------------------------

def spend(event: dict[str, Any]) -> Report | None:
    """Every `step_finish` carries its step's tokens and cost, so li stops OpenCode within one step
    of a token limit; each step is added, counted as its concluded usage is (`usage_tokens`). Its cost
    is recorded but carries no dollar cap: the cost is OpenCode's own estimate, 0 for a model it
    has no price for (every recorded stream says 0), so a 0 could not be told from free."""
    if event.get("type") != "step_finish":
        return None
    usage = opencode_usage([event])
    return Report(usage_tokens(usage), price(usage.get("cost_usd")))


CLI: Final = AgentCli(
    name=NAME, executable="opencode", arguments=arguments, permission_flags=PERMISSION_FLAGS, resume=("--session",),
    owns=owns, beats=beats, outcome=outcome, reports_tokens=True, spend=spend,
    prompts="opencode run has a flag to approve every permission, none to ask",
    doctor=DoctorProbe("opencode", "install the opencode CLI (npm: opencode-ai) to run `li agent opencode ...`; "
                                   "other providers still work"),
)
