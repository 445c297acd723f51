"""Gemini CLI: `gemini -p "" --output-format stream-json [-m M] [EXTRA]`, the prompt on stdin.

`-p` runs headless and is "appended to input on stdin": empty here, so the prompt is exactly what
stdin carried. Its stream is `init`, `message`, `tool_use`, `tool_result`, `error` and `result`
events: the assistant messages are the answer and the `result` ends it, with the run's stats.
Some exit statuses name their reason (55: a folder it does not trust, 41: authentication); it
resumes a session with `--resume ID`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from lionrun.domain.agents import AgentCli, DoctorProbe
from lionrun.domain.agents.spend import Report, number
from lionrun.domain.agents.stream import (
    EMPTY_ANSWER,
    PROVIDER_AUTH,
    PROVIDER_ERROR,
    PROVIDER_REFUSED,
    Beat,
    Outcome,
    after,
    as_dict,
    as_number,
    as_text,
    clean,
    oneline,
    reason_of,
    retry_delay,
    tool_line,
)

NAME: Final = "gemini"
TYPES: Final = frozenset({"init", "message", "tool_use", "tool_result", "error", "result"})
UNTRUSTED_EXIT: Final = 55  # gemini-cli: headless work in a folder it does not trust
AUTH_EXIT: Final = 41  # gemini-cli FatalAuthenticationError
# Its read-only is its `default` approval mode, under which a headless run denies every tool call
# that would need approval (edits, shell); its `plan` mode may leave planning and edit in headless runs.
PERMISSION_FLAGS: Final = {"read-only": ("--approval-mode", "default"), "edits": ("--approval-mode", "auto_edit"),
                           "full": ("--approval-mode", "yolo")}


def arguments(model: str | None, extra: Sequence[str] = ()) -> list[str]:
    return ["-p", "", "--output-format", "stream-json", *(["-m", model] if model else []), *extra]


def owns(event: dict[str, Any]) -> bool:
    """Its events; of the kinds it shares, a `result` with `status`/`stats` and an `error` with `severity`."""
    kind = event["type"]
    if kind == "result":
        return "status" in event or "stats" in event
    if kind == "error":
        return "severity" in event
    return kind in TYPES


def exit_reason(found: Outcome, exit_code: int) -> str | None:
    """55: a folder it does not trust; 41 before its stream ended: authentication."""
    if exit_code == UNTRUSTED_EXIT:
        return PROVIDER_REFUSED
    if exit_code == AUTH_EXIT and not found.ended:
        return PROVIDER_AUTH
    return None


# -- for people ----------------------------------------------------------------------------------

def beats(event: dict[str, Any]) -> list[Beat]:
    kind = event["type"]
    if kind == "message" and event.get("role") == "assistant" and isinstance(event.get("content"), str):
        return [Beat("delta" if event.get("delta") else "text", clean(event["content"]))]
    if kind == "tool_use":
        return [Beat("tool", tool_line(event.get("tool_name"), event.get("parameters")))]
    if kind == "tool_result" and event.get("status") == "error":
        error = as_dict(event.get("error"))
        return [Beat("error", oneline(f"tool failed: {as_text(error.get('message')) or as_text(event.get('output'))}"))]
    if kind == "error":
        mark = "warning" if event.get("severity") == "warning" else "error"
        return [Beat(mark, oneline(as_text(event.get("message")) or mark))]
    if kind == "result":
        found = []
        if event.get("status") == "error" or event.get("error"):
            # its type (unless "unknown") and message; none: "" — the error event before it said
            # why, else the transcript says the run failed
            error = as_dict(event.get("error"))
            kind = as_text(error.get("type")) if as_text(error.get("type")) != "unknown" else ""
            found.append(Beat("error", oneline(": ".join(t for t in (kind, as_text(error.get("message"))) if t))))
        usage = gemini_usage(event.get("stats"))
        return [*found, Beat("usage", usage=usage)] if usage else found
    return []


_FLAT: Final = {"input_tokens": "input_tokens", "output_tokens": "output_tokens",
                       "cached": "cached_input_tokens", "total_tokens": "total_tokens",
                       "tool_calls": "tool_calls", "duration_ms": "duration_ms"}
_MODEL: Final = {"prompt": "input_tokens", "candidates": "output_tokens", "cached": "cached_input_tokens",
                        "thoughts": "thoughts_tokens", "tool": "tool_tokens", "total": "total_tokens"}


def gemini_usage(stats: object) -> dict[str, Any]:
    """Every token class of Gemini's stats: the stream's totals, or each model's `tokens` summed.

    The stream-json `result` carries totals (input including cached, output, cached, total —
    which also counts thoughts and tool tokens); the json output's per-model `tokens` name
    thoughts and tool tokens apart. Whichever is there is read; nothing is invented.
    """
    stats = as_dict(stats)
    usage: dict[str, Any] = {}
    for key, name in _FLAT.items():
        if as_number(stats.get(key)) is not None:
            usage[name] = stats[key]
    if "input_tokens" in usage:
        return usage
    for entry in as_dict(stats.get("models")).values():
        tokens = as_dict(as_dict(entry).get("tokens"))
        for key, name in _MODEL.items():
            number = as_number(tokens.get(key))
            if number is not None:
                usage[name] = usage.get(name, 0) + number
    return usage


# -- for its provider ----------------------------------------------------------------------------

def outcome(events: list[dict[str, Any]]) -> Outcome:
    """Gemini emits no `result` on some failures and exits 0 on an empty response
    (google-gemini/gemini-cli#20183, #24290): only a `result` of status success with text is an answer."""
    session = next((as_text(e.get("session_id")) for e in events if e["type"] == "init"
                    and as_text(e.get("session_id"))), None)
    results = [e for e in events if e["type"] == "result" and owns(e)]
    said = _said(events)
    if not results:
        return Outcome(None, True, {"error": "no result event"}, reason=reason_of(None, said) if said else PROVIDER_ERROR,
                       message=said or "the stream ended without a result event", session_id=session)
    final = results[-1]
    usage = gemini_usage(final.get("stats"))
    error = as_dict(final.get("error"))
    if final.get("status") != "success" or error:
        message = as_text(error.get("message")) or said or "the run failed"
        delay = retry_delay(message)
        return Outcome(None, True, usage, ended=True, reason=reason_of(None, message), message=message,
                       retry_at=after(as_text(final.get("timestamp")), delay), retry_after=delay, session_id=session)
    answer = "".join(e["content"] for e in events if e["type"] == "message" and e.get("role") == "assistant"
                     and isinstance(e.get("content"), str))
    if not answer.strip():
        return Outcome(None, True, usage, ended=True, reason=EMPTY_ANSWER, message=said or "the result carried no answer",
                       session_id=session)
    return Outcome(answer, False, usage, ended=True, session_id=session)


def _said(events: list[dict[str, Any]]) -> str:
    """The message of its last error event that is no warning ("" without one)."""
    errors = [e for e in events if e["type"] == "error" and owns(e) and e.get("severity") != "warning"]
    return as_text(errors[-1].get("message")) if errors else ""


def spend(event: dict[str, Any]) -> Report | None:
    """Usage comes only in the closing `result`'s stats: li learns the spend when the run ends (as
    with Codex). Its total counts every class, else input plus output."""
    stats = event.get("stats")
    if event.get("type") != "result" or not isinstance(stats, dict):
        return None
    total = number(stats.get("total_tokens")) or number(stats.get("input_tokens")) + number(stats.get("output_tokens"))
    return Report(int(total), final=True)


CLI: Final = AgentCli(
    name=NAME, executable="gemini", arguments=arguments, permission_flags=PERMISSION_FLAGS, resume=("--resume",),
    owns=owns, beats=beats, outcome=outcome, exit_reason=exit_reason, reports_tokens=True, spend=spend,
    prompts="gemini -p denies every tool call that needs approval",
    doctor=DoctorProbe("gemini", "install the gemini CLI to run `li agent gemini ...`; other providers still work"),
)
