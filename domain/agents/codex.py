"""Codex: `codex exec --json --skip-git-repo-check [--model M] [EXTRA] -`, a `-` prompt read from stdin.

Its stream is `thread.*`, `turn.*`, `item.*` and `error` events; the last `agent_message` item is
the answer and the turn's end decides. It resumes a session with the `resume ID` subcommand after
exec's flags (the argv ends with `-`, so those come last among its arguments).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Final

from lionrun.domain.agents import AgentCli, DoctorProbe
from lionrun.domain.agents.spend import Report, number
from lionrun.domain.agents.stream import (
    ARG_WIDTH,
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

NAME: Final = "codex"
TYPES: Final = frozenset({"thread.started", "turn.started", "turn.completed", "turn.failed",
                          "item.started", "item.updated", "item.completed", "error"})
PERMISSION_FLAGS: Final = {"read-only": ("--sandbox", "read-only"), "edits": ("--sandbox", "workspace-write"),
                           "full": ("--sandbox", "danger-full-access")}
_ANSWERS: Final = ("agent_message", "assistant_message")


def arguments(model: str | None, extra: Sequence[str] = ()) -> list[str]:
    return ["exec", "--json", "--skip-git-repo-check", *(["--model", model] if model else []), *extra, "-"]


def owns(event: dict[str, Any]) -> bool:
    """Its events; an `error` it shares with Gemini is Codex's unless it carries Gemini's `severity`."""
    kind = event["type"]
    return kind in TYPES and not (kind == "error" and "severity" in event)


# -- for people ----------------------------------------------------------------------------------

def beats(event: dict[str, Any]) -> list[Beat]:
    kind = event["type"]
    if kind == "turn.completed":
        usage = codex_usage([event])
        return [Beat("usage", usage=usage)] if usage else []
    if kind == "turn.failed":
        return [Beat("error", oneline(as_text(as_dict(event.get("error")).get("message")) or "the turn failed"))]
    if kind == "error":
        message = as_text(event.get("message"))
        retry = codex_retry(message)
        if retry is not None:
            return [Beat("retry", oneline(retry))]
        return [Beat("error", oneline(message or "error"))]
    item = as_dict(event.get("item"))
    if kind == "item.started":
        return _call(item)
    if kind == "item.completed":
        return _done(item)
    return []


def _call(item: dict[str, Any]) -> list[Beat]:
    kind = item.get("type")
    if kind == "command_execution":
        return [Beat("tool", tool_line("shell", {"command": item.get("command")}))]
    if kind == "mcp_tool_call":
        name = ".".join(as_text(item.get(k)) for k in ("server", "tool") if as_text(item.get(k)))
        return [Beat("tool", tool_line(name or "mcp", item.get("arguments")))]
    if kind == "web_search":
        return [Beat("tool", tool_line("web_search", {"query": item.get("query")}))]
    return []


def _done(item: dict[str, Any]) -> list[Beat]:
    kind = item.get("type")
    if kind in _ANSWERS and isinstance(item.get("text"), str):
        return [Beat("text", clean(item["text"]))]
    if kind == "file_change":
        changes = [c for c in item.get("changes", []) if isinstance(c, dict)] if isinstance(
            item.get("changes"), list) else []
        paths = ", ".join(f"{as_text(c.get('path'))} ({as_text(c.get('kind')) or 'change'})" for c in changes)
        return [Beat("tool", oneline(f"edit  {paths}" if paths else "edit", ARG_WIDTH + 8))]
    if kind == "command_execution":
        code = item.get("exit_code")
        if item.get("status") == "failed" or (isinstance(code, int) and code != 0):
            return [Beat("error", oneline(f"shell {as_text(item.get('command'))} exited {code}"))]
        return []
    if kind == "mcp_tool_call" and (item.get("status") == "failed" or item.get("error")):
        return [Beat("error", oneline(f"{as_text(item.get('tool')) or 'tool'} failed: "
                                       f"{as_text(as_dict(item.get('error')).get('message'))}"))]
    if kind == "error":  # a notice of the run ("Model metadata … not found"): it did not fail the turn
        return [Beat("warning", oneline(as_text(item.get("message")) or "error"))]
    return []


_RETRY = re.compile(r"^Reconnecting\.\.\.\s*(?:(\d+)/(\d+)\s*)?(.*)$", re.S)


def codex_retry(message: str) -> str | None:
    """`retrying (1/5): <why>` for a Codex `error` event that is one of its own retries
    ("Reconnecting... 1/5 (…)", "Reconnecting... waiting for network (…)"); None for any other."""
    match = _RETRY.match(message.strip())
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
        for key, value in as_dict(event.get("usage")).items():
            number = as_number(value)
            if number is not None and isinstance(key, str):
                usage[key] = usage.get(key, 0) + number
    return usage


# -- for its provider ----------------------------------------------------------------------------

def outcome(events: list[dict[str, Any]]) -> Outcome:
    """Codex's `error` events are its own retries or the words of a failure; the turn's end
    (`turn.completed` / `turn.failed`) decides, never an `error` alone."""
    answer, ended, failed, message = _turn(events)
    session = next((as_text(e.get("thread_id")) for e in events if e["type"] == "thread.started"
                    and as_text(e.get("thread_id"))), None)
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


def _turn(events: list[dict[str, Any]]) -> tuple[str | None, bool, bool, str | None]:
    """(the last answer, whether the turn ended, whether it failed, the last failure's words)."""
    answer, ended, failed = None, False, False
    message: str | None = None
    for event in events:
        kind, item = event["type"], as_dict(event.get("item"))
        if kind == "item.completed" and item.get("type") in _ANSWERS:
            answer = item["text"] if isinstance(item.get("text"), str) else answer
        elif kind == "error" and as_text(event.get("message")):
            message = as_text(event["message"])
        elif kind in ("turn.failed", "turn.completed"):
            ended, failed = True, kind == "turn.failed"
            if failed:
                message = as_text(as_dict(event.get("error")).get("message")) or message or "the turn failed"
    return answer, ended, failed, message


def spend(event: dict[str, Any]) -> Report | None:
    """Usage comes only on `turn.completed` (or `turn.failed`), once per exec: li learns the spend
    when the turn ends, so a token budget is judged at the end (a run over it is still
    `budget_exceeded`). Its input holds the cached input, its output the reasoning."""
    usage = event.get("usage")
    if event.get("type") not in ("turn.completed", "turn.failed") or not isinstance(usage, dict):
        return None
    return Report(int(number(usage.get("input_tokens")) + number(usage.get("output_tokens"))))


CLI: Final = AgentCli(
    name=NAME, executable="codex", arguments=arguments, permission_flags=PERMISSION_FLAGS, resume=("resume",),
    owns=owns, beats=beats, outcome=outcome, reports_tokens=True, spend=spend,
    prompts="codex exec denies or stops where it would ask",
    doctor=DoctorProbe("codex", "install the codex CLI to run `li agent codex ...`; other providers still work"),
)
