"""Agent CLI event streams read for people and for the record: one home for each vendor's events.

`console.log` keeps the raw stream (the evidence). This module turns it into what a person reads
— assistant text as text, one line per tool call, errors marked, the final answer and a usage
line at the end — chunk by chunk while following (`Transcript`), and gives a provider the
answer, the error and every token class its vendor reports (`outcome`).

The events are the documented headless streams: Claude Code `--output-format stream-json`
(system, assistant, user, result), Codex `exec --json` (thread.*, turn.*, item.*, error) and
Gemini CLI `--output-format stream-json` (init, message, tool_use, tool_result, error, result).
A line is hostile input: bounded in length, never trusted to be JSON; a line that is not one of
these events is shown as it is, and nothing here raises on any bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from lionrun.domain.ending import BUDGET_EXCEEDED
from lionrun.domain.ending import EMPTY_ANSWER as ENDING_EMPTY_ANSWER
from lionrun.domain.ending import IDLE_TIMEOUT as ENDING_IDLE_TIMEOUT

MAX_LINE: Final = 1 << 20  # bytes of one event line that are parsed; a longer one is cut
ARG_WIDTH: Final = 160  # characters of a tool call's main argument on its line
ERROR_WIDTH: Final = 400  # characters of an error message on its line
_PREFIX = re.compile(r"^\[([A-Za-z0-9][A-Za-z0-9._:-]{0,63})\] ")  # a shared console's leg prefix
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # never reach a terminal from decoded JSON
_MAIN_ARGUMENTS: Final = ("command", "cmd", "file_path", "path", "absolute_path", "dir_path", "pattern",
                          "url", "query", "description", "prompt")

TOOL_MARK: Final = "→"
ERROR_MARK: Final = "✗"
WARNING_MARK: Final = "!"
RETRY_MARK: Final = "↻"

# Why an agent leg failed, read from its CLI's stream and exit status (advisory, as every D4
# reason code: the outcome alone decides; docs/wire-contract.md "Agent ends").
PROVIDER_AUTH: Final = "provider_auth"  # the key is missing, wrong or not allowed (HTTP 401/403)
PROVIDER_RATE_LIMITED: Final = "provider_rate_limited"  # HTTP 429, a quota: retry at `retry_at`
PROVIDER_OVERLOADED: Final = "provider_overloaded"  # the vendor's side failed or is overloaded (5xx, 529)
PROVIDER_UNREACHABLE: Final = "provider_unreachable"  # the API could not be reached, or the connection was cut
PROVIDER_REFUSED: Final = "provider_refused"  # the CLI refused the work here (Gemini: an untrusted folder)
EMPTY_ANSWER: Final = ENDING_EMPTY_ANSWER  # the stream ended without an answer (an exit 0 leaving nothing: completed_empty)
PROVIDER_ERROR: Final = "provider_error"  # any other failure the CLI flagged, or a stream with no end
IDLE_TIMEOUT: Final = ENDING_IDLE_TIMEOUT  # status timed_out: the CLI wrote no event for --idle-timeout seconds
AGENT_REASONS: Final = (PROVIDER_AUTH, PROVIDER_RATE_LIMITED, PROVIDER_OVERLOADED, PROVIDER_UNREACHABLE,
                        PROVIDER_REFUSED, EMPTY_ANSWER, PROVIDER_ERROR)
CLAUDE_OVER_BUDGET: Final = "error_max_budget_usd"  # Claude Code's result at its own --max-budget-usd
GEMINI_UNTRUSTED_EXIT: Final = 55  # gemini-cli: headless work in a folder it does not trust
GEMINI_AUTH_EXIT: Final = 41  # gemini-cli FatalAuthenticationError

CLAUDE_TYPES: Final = frozenset({"system", "assistant", "user", "result", "stream_event", "rate_limit_event"})
CODEX_TYPES: Final = frozenset({"thread.started", "turn.started", "turn.completed", "turn.failed",
                                "item.started", "item.updated", "item.completed", "error"})
GEMINI_TYPES: Final = frozenset({"init", "message", "tool_use", "tool_result", "error", "result"})


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


def vendor_of(event: dict[str, Any]) -> str | None:
    """Which CLI speaks this event: `claude`, `codex`, `gemini`, or None when none of them does."""
    kind = event["type"]
    if kind == "result":  # both: Claude's carries `subtype`/`result`, Gemini's `status`/`stats`
        return "gemini" if "status" in event or "stats" in event else "claude"
    if kind == "error":  # both: one shape for a person
        return "gemini" if "severity" in event else "codex"
    for vendor, kinds in (("claude", CLAUDE_TYPES), ("codex", CODEX_TYPES), ("gemini", GEMINI_TYPES)):
        if kind in kinds:
            return vendor
    return None


def beats(event: dict[str, Any]) -> list[Beat]:
    """What one event shows a person (nothing for bookkeeping events such as init)."""
    vendor = vendor_of(event)
    if vendor == "claude":
        return _claude_beats(event)
    if vendor == "codex":
        return _codex_beats(event)
    if vendor == "gemini":
        return _gemini_beats(event)
    return []


# -- Claude Code ---------------------------------------------------------------------------------

def _claude_beats(event: dict[str, Any]) -> list[Beat]:
    kind = event["type"]
    if kind == "assistant" and event.get("error"):
        return []  # the API error's text as a message: the error `result` that follows says it, once
    if kind == "assistant":
        return [b for block in _blocks(event) for b in _claude_block(block)]
    if kind == "system" and event.get("subtype") == "api_retry":
        return [Beat("retry", _claude_retry(event))]
    if kind == "user":
        return [Beat("error", _oneline(f"tool failed: {_result_text(block.get('content'))}"))
                for block in _blocks(event) if block.get("type") == "tool_result" and block.get("is_error")]
    if kind == "result":
        return _claude_result(event)
    return []


def _claude_block(block: dict[str, Any]) -> list[Beat]:
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        return [Beat("text", clean(block["text"]))]
    if block.get("type") == "tool_use":
        return [Beat("tool", _tool_line(block.get("name"), block.get("input")))]
    return []


def _claude_retry(event: dict[str, Any]) -> str:
    """`retrying (2/10): HTTP 500 server_error, in 1.2 s`: one of Claude's own retries."""
    attempt, most = _number(event.get("attempt")), _number(event.get("max_retries"))
    count = f" ({attempt}/{most})" if attempt is not None and most is not None else ""
    status = _number(event.get("error_status"))
    what = " ".join(t for t in (f"HTTP {status}" if status is not None else "", _text(event.get("error"))) if t)
    delay = _number(event.get("retry_delay_ms"))
    wait = f", in {delay / 1000:.1f} s" if delay is not None else ""
    return _oneline(f"retrying{count}: {what or 'error'}{wait}")


def _claude_failed(event: dict[str, Any]) -> bool:
    """A `result` that flags an error: `is_error`, or a subtype other than success (Claude `-p`
    says `subtype: "success"` with `is_error: true` on a 429, anthropics/claude-code#79500)."""
    return bool(event.get("is_error")) or (isinstance(event.get("subtype"), str) and event["subtype"] != "success")


def _claude_message(event: dict[str, Any]) -> str:
    result, errors = event.get("result"), event.get("errors")
    if isinstance(result, str) and result:
        return result
    if isinstance(errors, list) and errors:
        return "; ".join(str(e) for e in errors)
    subtype = _text(event.get("subtype"))
    return subtype if subtype and subtype != "success" else "the CLI flagged an error"


def _claude_result(event: dict[str, Any]) -> list[Beat]:
    found: list[Beat] = []
    result = event.get("result")
    if _claude_failed(event):
        found.append(Beat("error", _oneline(_claude_message(event))))
    elif isinstance(result, str) and result:
        found.append(Beat("answer", clean(result)))
    return [*found, Beat("usage", usage=claude_usage(event))] if isinstance(event.get("usage"), dict) else found


def claude_usage(result: dict[str, Any]) -> dict[str, Any]:
    """Every token class of a Claude `result` event, with its cost, turns and duration."""
    raw = _dict(result.get("usage"))
    usage: dict[str, Any] = {k: _number(raw.get(k)) for k in (
        "input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")}
    usage.update(cost_usd=_number(result.get("total_cost_usd")), num_turns=_number(result.get("num_turns")),
                 duration_ms=_number(result.get("duration_ms")), session_id=_text(result.get("session_id")) or None,
                 subtype=_text(result.get("subtype")) or None)
    return usage


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(_text(_dict(part).get("text")) for part in content)
    return ""


def _blocks(event: dict[str, Any]) -> list[dict[str, Any]]:
    content = _dict(event.get("message")).get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


# -- Codex ---------------------------------------------------------------------------------------

def _codex_beats(event: dict[str, Any]) -> list[Beat]:
    kind = event["type"]
    if kind == "turn.completed":
        usage = codex_usage([event])
        return [Beat("usage", usage=usage)] if usage else []
    if kind == "turn.failed":
        return [Beat("error", _oneline(_text(_dict(event.get("error")).get("message")) or "the turn failed"))]
    if kind == "error":
        message = _text(event.get("message"))
        retry = codex_retry(message)
        if retry is not None:
            return [Beat("retry", _oneline(retry))]
        return [Beat("error", _oneline(message or "error"))]
    item = _dict(event.get("item"))
    if kind == "item.started":
        return _codex_call(item)
    if kind == "item.completed":
        return _codex_done(item)
    return []


def _codex_call(item: dict[str, Any]) -> list[Beat]:
    kind = item.get("type")
    if kind == "command_execution":
        return [Beat("tool", _tool_line("shell", {"command": item.get("command")}))]
    if kind == "mcp_tool_call":
        name = ".".join(_text(item.get(k)) for k in ("server", "tool") if _text(item.get(k)))
        return [Beat("tool", _tool_line(name or "mcp", item.get("arguments")))]
    if kind == "web_search":
        return [Beat("tool", _tool_line("web_search", {"query": item.get("query")}))]
    return []


def _codex_done(item: dict[str, Any]) -> list[Beat]:
    kind = item.get("type")
    if kind in ("agent_message", "assistant_message") and isinstance(item.get("text"), str):
        return [Beat("text", clean(item["text"]))]
    if kind == "file_change":
        changes = [c for c in item.get("changes", []) if isinstance(c, dict)] if isinstance(
            item.get("changes"), list) else []
        paths = ", ".join(f"{_text(c.get('path'))} ({_text(c.get('kind')) or 'change'})" for c in changes)
        return [Beat("tool", _oneline(f"edit  {paths}" if paths else "edit", ARG_WIDTH + 8))]
    if kind == "command_execution":
        code = item.get("exit_code")
        if item.get("status") == "failed" or (isinstance(code, int) and code != 0):
            return [Beat("error", _oneline(f"shell {_text(item.get('command'))} exited {code}"))]
        return []
    if kind == "mcp_tool_call" and (item.get("status") == "failed" or item.get("error")):
        return [Beat("error", _oneline(f"{_text(item.get('tool')) or 'tool'} failed: "
                                       f"{_text(_dict(item.get('error')).get('message'))}"))]
    if kind == "error":  # a notice of the run ("Model metadata … not found"): it did not fail the turn
        return [Beat("warning", _oneline(_text(item.get("message")) or "error"))]
    return []


_CODEX_RETRY = re.compile(r"^Reconnecting\.\.\.\s*(?:(\d+)/(\d+)\s*)?(.*)$", re.S)


def codex_retry(message: str) -> str | None:
    """`retrying (1/5): <why>` for a Codex `error` event that is one of its own retries
    ("Reconnecting... 1/5 (…)", "Reconnecting... waiting for network (…)"); None for any other."""
    match = _CODEX_RETRY.match(message.strip())
    if match is None:
        return None
    attempt, most, rest = match.groups()
    why = rest.strip()
    if why.startswith("(") and why.endswith(")"):
        why = why[1:-1]
    count = f" ({attempt}/{most})" if attempt else ""
    return f"retrying{count}: {why}" if why else f"retrying{count}"


def codex_usage(events: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Every token class the turns reported (input, cached input, output, …), summed over turns."""
    usage: dict[str, Any] = {}
    for event in events:
        if event.get("type") not in ("turn.completed", "turn.failed"):
            continue
        for key, value in _dict(event.get("usage")).items():
            number = _number(value)
            if number is not None and isinstance(key, str):
                usage[key] = usage.get(key, 0) + number
    return usage


# -- Gemini CLI ----------------------------------------------------------------------------------

def _gemini_beats(event: dict[str, Any]) -> list[Beat]:
    kind = event["type"]
    if kind == "message" and event.get("role") == "assistant" and isinstance(event.get("content"), str):
        return [Beat("delta" if event.get("delta") else "text", clean(event["content"]))]
    if kind == "tool_use":
        return [Beat("tool", _tool_line(event.get("tool_name"), event.get("parameters")))]
    if kind == "tool_result" and event.get("status") == "error":
        error = _dict(event.get("error"))
        return [Beat("error", _oneline(f"tool failed: {_text(error.get('message')) or _text(event.get('output'))}"))]
    if kind == "error":
        mark = "warning" if event.get("severity") == "warning" else "error"
        return [Beat(mark, _oneline(_text(event.get("message")) or mark))]
    if kind == "result":
        found = []
        if event.get("status") == "error" or event.get("error"):
            # its type (unless "unknown") and message; none: "" — the error event before it said
            # why, else the transcript says the run failed
            error = _dict(event.get("error"))
            kind = _text(error.get("type")) if _text(error.get("type")) != "unknown" else ""
            found.append(Beat("error", _oneline(": ".join(t for t in (kind, _text(error.get("message"))) if t))))
        usage = gemini_usage(event.get("stats"))
        return [*found, Beat("usage", usage=usage)] if usage else found
    return []


_GEMINI_FLAT: Final = {"input_tokens": "input_tokens", "output_tokens": "output_tokens",
                       "cached": "cached_input_tokens", "total_tokens": "total_tokens",
                       "tool_calls": "tool_calls", "duration_ms": "duration_ms"}
_GEMINI_MODEL: Final = {"prompt": "input_tokens", "candidates": "output_tokens", "cached": "cached_input_tokens",
                        "thoughts": "thoughts_tokens", "tool": "tool_tokens", "total": "total_tokens"}


def gemini_usage(stats: object) -> dict[str, Any]:
    """Every token class of Gemini's stats: the stream's totals, or each model's `tokens` summed.

    The stream-json `result` carries totals (input including cached, output, cached, total —
    which also counts thoughts and tool tokens); the json output's per-model `tokens` name
    thoughts and tool tokens apart. Whichever is there is read; nothing is invented.
    """
    stats = _dict(stats)
    usage: dict[str, Any] = {}
    for key, name in _GEMINI_FLAT.items():
        if _number(stats.get(key)) is not None:
            usage[name] = stats[key]
    if "input_tokens" in usage:
        return usage
    for entry in _dict(stats.get("models")).values():
        tokens = _dict(_dict(entry).get("tokens"))
        for key, name in _GEMINI_MODEL.items():
            number = _number(tokens.get(key))
            if number is not None:
                usage[name] = usage.get(name, 0) + number
    return usage


# -- a provider's view of its stream -------------------------------------------------------------

def outcome(vendor: str, lines: Iterable[str]) -> Outcome:
    """The answer, error and usage of one CLI's whole stream (the lines its stdout gave)."""
    events = [e for e in (event_of(line) for line in lines) if e is not None]
    if vendor == "claude":
        return _claude_outcome(events)
    if vendor == "codex":
        return _codex_outcome(events)
    return _gemini_outcome(events)


def _claude_outcome(events: list[dict[str, Any]]) -> Outcome:
    session = next((_text(e.get("session_id")) for e in events if _text(e.get("session_id"))), None)
    retry_at = _claude_reset(events)
    results = [e for e in events if e["type"] == "result" and vendor_of(e) == "claude"]
    if not results:
        last = _claude_last_error(events)
        reason = reason_of(last[0], last[1]) if last is not None else PROVIDER_ERROR
        return Outcome(is_error=True, usage={"error": "no result event"}, reason=reason,
                       message="the stream ended without a result event", retry_at=retry_at, session_id=session)
    final = results[-1]
    answer = final.get("result")
    text = answer if isinstance(answer, str) else None
    usage = claude_usage(final)
    if final.get("subtype") == CLAUDE_OVER_BUDGET:  # its own --max-budget-usd stopped it (issue 42)
        return Outcome(None, True, usage, ended=True, reason=BUDGET_EXCEEDED,
                       message=_claude_message(final), session_id=session)
    if _claude_failed(final):
        message = _claude_message(final)
        status = _number(final.get("api_error_status"))
        kind = _claude_last_error(events)
        reason = reason_of(int(status) if status is not None else (kind[0] if kind else None),
                           f"{message} {kind[1] if kind else ''}")
        return Outcome(None, True, usage, ended=True, reason=reason, message=message,
                       retry_at=retry_at, retry_after=retry_delay(message), session_id=session)
    if not text or not text.strip():
        return Outcome(None, True, usage, ended=True, reason=EMPTY_ANSWER,
                       message="the result carried no answer", session_id=session)
    return Outcome(text, False, usage, ended=True, session_id=session)


_CLAUDE_KINDS: Final = {"authentication_failed": 401, "billing_error": 403, "rate_limit": 429, "overloaded": 529,
                        "server_error": 500}


def _claude_last_error(events: list[dict[str, Any]]) -> tuple[int | None, str] | None:
    """(HTTP status, error kind) of the last API error the stream named: an `api_retry`, or an
    assistant message marked with `error` (its text is the vendor's message)."""
    found: tuple[int | None, str] | None = None
    for event in events:
        kind = _text(event.get("error"))
        if event["type"] == "system" and event.get("subtype") == "api_retry":
            status = _number(event.get("error_status"))
            found = (int(status) if status is not None else _CLAUDE_KINDS.get(kind), kind)
        elif event["type"] == "assistant" and kind:
            text = " ".join(_text(b.get("text")) for b in _blocks(event))
            found = (_CLAUDE_KINDS.get(kind) if kind != "server_error" else None, f"{kind} {text}")
    return found


def _claude_reset(events: list[dict[str, Any]]) -> str | None:
    """When a rejected rate limit resets: the last `rate_limit_event` whose status is `rejected`
    (`rate_limit_info.resetsAt`, seconds since the epoch)."""
    found = None
    for event in events:
        info = _dict(event.get("rate_limit_info"))
        if event["type"] == "rate_limit_event" and info.get("status") == "rejected":
            moment = _number(info.get("resetsAt"))
            if moment is not None and 0 < moment < 1e11:
                found = _iso(datetime.fromtimestamp(moment, UTC))
    return found


def _codex_outcome(events: list[dict[str, Any]]) -> Outcome:
    """Codex's `error` events are its own retries or the words of a failure; the turn's end
    (`turn.completed` / `turn.failed`) decides, never an `error` alone."""
    answer, ended, failed = None, False, False
    message: str | None = None
    session = next((_text(e.get("thread_id")) for e in events if e["type"] == "thread.started"
                    and _text(e.get("thread_id"))), None)
    for event in events:
        item = _dict(event.get("item"))
        if event["type"] == "item.completed" and item.get("type") in ("agent_message", "assistant_message"):
            answer = item["text"] if isinstance(item.get("text"), str) else answer
        elif event["type"] == "error" and _text(event.get("message")):
            message = _text(event["message"])
        elif event["type"] == "turn.failed":
            ended, failed = True, True
            message = _text(_dict(event.get("error")).get("message")) or message or "the turn failed"
        elif event["type"] == "turn.completed":
            ended, failed = True, False
    usage = codex_usage(events)
    if not ended:
        reason = reason_of(None, message) if message else PROVIDER_ERROR
        return Outcome(None, True, usage, False, reason=reason,
                       message=message or "the stream ended before its turn did", session_id=session)
    if failed:
        text = message or ""
        return Outcome(None, True, usage, True, reason=reason_of(None, text), message=text,
                       retry_after=retry_delay(text), session_id=session)
    if not answer or not answer.strip():
        return Outcome(None, True, usage, True, reason=EMPTY_ANSWER, message="the turn gave no answer",
                       session_id=session)
    return Outcome(answer, False, usage, True, session_id=session)


def _gemini_outcome(events: list[dict[str, Any]]) -> Outcome:
    """Gemini emits no `result` on some failures and exits 0 on an empty response
    (google-gemini/gemini-cli#20183, #24290): only a `result` of status success with text is an answer."""
    session = next((_text(e.get("session_id")) for e in events if e["type"] == "init"
                    and _text(e.get("session_id"))), None)
    results = [e for e in events if e["type"] == "result" and vendor_of(e) == "gemini"]
    answer = "".join(e["content"] for e in events if e["type"] == "message" and e.get("role") == "assistant"
                     and isinstance(e.get("content"), str))
    errors = [e for e in events if e["type"] == "error" and vendor_of(e) == "gemini" and e.get("severity") != "warning"]
    said = _text(errors[-1].get("message")) if errors else ""
    if not results:
        return Outcome(None, True, {"error": "no result event"}, reason=reason_of(None, said) if said else PROVIDER_ERROR,
                       message=said or "the stream ended without a result event", session_id=session)
    final = results[-1]
    usage = gemini_usage(final.get("stats"))
    error = _dict(final.get("error"))
    if final.get("status") != "success" or error:
        message = _text(error.get("message")) or said or "the run failed"
        delay = retry_delay(message)
        return Outcome(None, True, usage, ended=True, reason=reason_of(None, message), message=message,
                       retry_at=_after(_text(final.get("timestamp")), delay), retry_after=delay, session_id=session)
    if not answer.strip():
        return Outcome(None, True, usage, ended=True, reason=EMPTY_ANSWER, message=said or "the result carried no answer",
                       session_id=session)
    return Outcome(answer, False, usage, ended=True, session_id=session)


def end_reason(vendor: str, found: Outcome, exit_code: int) -> str | None:
    """Why the leg failed, from the stream's verdict and the CLI's exit status (None: it did not).

    An exit other than 0 is a failure whatever the stream said; some exits name their reason
    (Gemini: 55 an untrusted folder, 41 authentication).
    """
    if vendor == "gemini" and exit_code == GEMINI_UNTRUSTED_EXIT:
        return PROVIDER_REFUSED
    if vendor == "gemini" and exit_code == GEMINI_AUTH_EXIT and not found.ended:
        return PROVIDER_AUTH
    if found.is_error:
        return found.reason or PROVIDER_ERROR
    return PROVIDER_ERROR if exit_code != 0 else None


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


def _after(stamp: str, delay: float | None) -> str | None:
    """`stamp` (the event's own ISO time) plus `delay` seconds, as ISO-8601 UTC; None without either."""
    if delay is None or not stamp:
        return None
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return _iso(moment.astimezone(UTC) + timedelta(seconds=delay))


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds")


# -- rendering for people ------------------------------------------------------------------------

_USAGE_LABELS: Final = (
    ("input_tokens", "in"), ("cached_input_tokens", "cached in"), ("cache_read_input_tokens", "cache read"),
    ("cache_creation_input_tokens", "cache write"), ("output_tokens", "out"),
    ("reasoning_output_tokens", "reasoning"), ("thoughts_tokens", "thoughts"), ("tool_tokens", "tool"),
    ("total_tokens", "total"),
)


def usage_line(usage: dict[str, Any]) -> str:
    """`tokens: in 11 · cache read 3 · out 7 · cost $0.0123`: every reported token class, named."""
    parts = [f"{label} {usage[key]}" for key, label in _USAGE_LABELS if _number(usage.get(key)) is not None]
    known = {key for key, _ in _USAGE_LABELS}
    parts += [f"{key.removesuffix('_tokens').replace('_', ' ')} {value}" for key, value in usage.items()
              if key.endswith("_tokens") and key not in known and _number(value) is not None]
    cost = _number(usage.get("cost_usd"))
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
        if event is None or vendor_of(event) is None:
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


# -- small helpers -------------------------------------------------------------------------------

def clean(text: str) -> str:
    """Decoded text without control characters a terminal would act on (newlines and tabs stay)."""
    return _CONTROL.sub("", text.replace("\r\n", "\n"))


def _prefixed(prefix: str, text: str) -> str:
    if not prefix or not text:
        return text
    return "".join(prefix + line for line in text.splitlines(keepends=True))


def _ended(text: str) -> str:
    return text if text.endswith("\n") or not text else text + "\n"


def _oneline(text: str, width: int = ERROR_WIDTH) -> str:
    flat = " ".join(clean(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _tool_line(name: object, arguments: object) -> str:
    label = _oneline(_text(name) or "tool", 64)
    argument = _main_argument(arguments)
    return f"{label}  {argument}" if argument else label


def _main_argument(arguments: object) -> str:
    """The argument a person recognises a call by: its command, path, pattern, url or query."""
    if isinstance(arguments, str):
        return _oneline(arguments, ARG_WIDTH)
    if not isinstance(arguments, dict) or not arguments:
        return ""
    for key in (*_MAIN_ARGUMENTS, *arguments):
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return _oneline(value, ARG_WIDTH)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return _oneline(" ".join(value), ARG_WIDTH)
    try:
        return _oneline(json.dumps(arguments, sort_keys=True, default=str), ARG_WIDTH)
    except (ValueError, TypeError, RecursionError):
        return ""


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _number(value: object) -> int | float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None
