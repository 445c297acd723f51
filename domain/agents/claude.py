"""Claude Code: `claude -p --output-format stream-json --verbose [--model M] [EXTRA]`, the prompt on stdin.

`-p` (print, non-interactive) reads piped stdin as the prompt; the stream's events are `system`,
`assistant`, `user` and the closing `result`, which answers. Its permission prompts can be handed
to li's permission-prompt tool (`--permission-mode ask`), it resumes a session with
`--resume ID`, and it refuses to skip its permission checks as root unless told it is sandboxed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from lionrun.domain.agents import AgentCli, DoctorProbe
from lionrun.domain.agents.spend import Report, billed_tokens, price
from lionrun.domain.agents.stream import (
    EMPTY_ANSWER,
    PROVIDER_ERROR,
    Beat,
    Outcome,
    as_dict,
    as_number,
    as_text,
    clean,
    iso,
    oneline,
    reason_of,
    retry_delay,
    tool_line,
)
from lionrun.domain.ending import BUDGET_EXCEEDED

NAME: Final = "claude"
TYPES: Final = frozenset({"system", "assistant", "user", "result", "stream_event", "rate_limit_event"})
OVER_BUDGET: Final = "error_max_budget_usd"  # Claude Code's result at its own --max-budget-usd
SANDBOX_SWITCHES: Final = ("IS_SANDBOX", "CLAUDE_CODE_BUBBLEWRAP")  # "1": Claude Code allows root to skip checks
PERMISSION_FLAGS: Final = {
    "read-only": ("--permission-mode", "plan"), "edits": ("--permission-mode", "acceptEdits"),
    "full": ("--permission-mode", "bypassPermissions"),
    # Every tool use it would ask about goes to li's permission-prompt tool (the runner
    # adds the --mcp-config that starts it: adapters/approval_mcp.py)
    "ask": ("--permission-mode", "default", "--permission-prompt-tool", "mcp__li__approve"),
}
_SKIPS: Final = frozenset({"--dangerously-skip-permissions", "--allow-dangerously-skip-permissions",
                           "--permission-mode=bypassPermissions"})


def arguments(model: str | None, extra: Sequence[str] = ()) -> list[str]:
    return ["-p", "--output-format", "stream-json", "--verbose", *(["--model", model] if model else []), *extra]


def root_refusal(args: Sequence[str], env: Mapping[str, str]) -> str | None:
    """Claude Code refuses to skip its permission checks as root ("--dangerously-skip-permissions
    cannot be used with root/sudo privileges") unless its environment says it is sandboxed
    (`IS_SANDBOX=1` or `CLAUDE_CODE_BUBBLEWRAP=1`): what to do instead, for a run that would ask
    it to; None when it would not."""
    if any(env.get(name) == "1" for name in SANDBOX_SWITCHES):
        return None
    pairs = set(zip(args, args[1:], strict=False))
    if not (_SKIPS & set(args) or ("--permission-mode", "bypassPermissions") in pairs):
        return None
    return ("claude refuses to skip its permission checks when it runs as root (--permission-mode full is "
            "its bypassPermissions): run li as an ordinary user, choose --permission-mode edits, or — in "
            "a disposable container — set IS_SANDBOX=1 in li's environment (Claude Code's own switch)")


def owns(event: dict[str, Any]) -> bool:
    """Its events; a `result` it shares with Gemini is Claude's unless it carries Gemini's `status`/`stats`."""
    kind = event["type"]
    return kind in TYPES and not (kind == "result" and ("status" in event or "stats" in event))


# -- for people ----------------------------------------------------------------------------------

def beats(event: dict[str, Any]) -> list[Beat]:
    kind = event["type"]
    if kind == "assistant" and event.get("error"):
        return []  # the API error's text as a message: the error `result` that follows says it, once
    if kind == "assistant":
        return [b for block in _blocks(event) for b in _block(block)]
    if kind == "system" and event.get("subtype") == "api_retry":
        return [Beat("retry", _retry(event))]
    if kind == "user":
        return [Beat("error", oneline(f"tool failed: {_result_text(block.get('content'))}"))
                for block in _blocks(event) if block.get("type") == "tool_result" and block.get("is_error")]
    if kind == "result":
        return _result(event)
    return []


def _block(block: dict[str, Any]) -> list[Beat]:
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        return [Beat("text", clean(block["text"]))]
    if block.get("type") == "tool_use":
        return [Beat("tool", tool_line(block.get("name"), block.get("input")))]
    return []


def _retry(event: dict[str, Any]) -> str:
    """`retrying (2/10): HTTP 500 server_error, in 1.2 s`: one of Claude's own retries."""
    attempt, most = as_number(event.get("attempt")), as_number(event.get("max_retries"))
    count = f" ({attempt}/{most})" if attempt is not None and most is not None else ""
    status = as_number(event.get("error_status"))
    what = " ".join(t for t in (f"HTTP {status}" if status is not None else "", as_text(event.get("error"))) if t)
    delay = as_number(event.get("retry_delay_ms"))
    wait = f", in {delay / 1000:.1f} s" if delay is not None else ""
    return oneline(f"retrying{count}: {what or 'error'}{wait}")


def _failed(event: dict[str, Any]) -> bool:
    """A `result` that flags an error: `is_error`, or a subtype other than success (Claude `-p`
    says `subtype: "success"` with `is_error: true` on a 429, anthropics/claude-code#79500)."""
    return bool(event.get("is_error")) or (isinstance(event.get("subtype"), str) and event["subtype"] != "success")


def _message(event: dict[str, Any]) -> str:
    result, errors = event.get("result"), event.get("errors")
    if isinstance(result, str) and result:
        return result
    if isinstance(errors, list) and errors:
        return "; ".join(str(e) for e in errors)
    subtype = as_text(event.get("subtype"))
    return subtype if subtype and subtype != "success" else "the CLI flagged an error"


def _result(event: dict[str, Any]) -> list[Beat]:
    found: list[Beat] = []
    result = event.get("result")
    if _failed(event):
        found.append(Beat("error", oneline(_message(event))))
    elif isinstance(result, str) and result:
        found.append(Beat("answer", clean(result)))
    return [*found, Beat("usage", usage=claude_usage(event))] if isinstance(event.get("usage"), dict) else found


def claude_usage(result: dict[str, Any]) -> dict[str, Any]:
    """Every token class of a Claude `result` event, with its cost, turns and duration."""
    raw = as_dict(result.get("usage"))
    usage: dict[str, Any] = {k: as_number(raw.get(k)) for k in (
        "input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")}
    usage.update(cost_usd=as_number(result.get("total_cost_usd")), num_turns=as_number(result.get("num_turns")),
                 duration_ms=as_number(result.get("duration_ms")), session_id=as_text(result.get("session_id")) or None,
                 subtype=as_text(result.get("subtype")) or None)
    return usage


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(as_text(as_dict(part).get("text")) for part in content)
    return ""


def _blocks(event: dict[str, Any]) -> list[dict[str, Any]]:
    content = as_dict(event.get("message")).get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


# -- for its provider ---------------------------------------------------------------------------

def outcome(events: list[dict[str, Any]]) -> Outcome:
    session = next((as_text(e.get("session_id")) for e in events if as_text(e.get("session_id"))), None)
    retry_at = _reset(events)
    results = [e for e in events if e["type"] == "result" and owns(e)]
    if not results:
        last = _last_error(events)
        reason = reason_of(last[0], last[1]) if last is not None else PROVIDER_ERROR
        return Outcome(is_error=True, usage={"error": "no result event"}, reason=reason,
                       message="the stream ended without a result event", retry_at=retry_at, session_id=session)
    final = results[-1]
    answer = final.get("result")
    text = answer if isinstance(answer, str) else None
    usage = claude_usage(final)
    if final.get("subtype") == OVER_BUDGET:  # its own --max-budget-usd stopped it
        return Outcome(None, True, usage, ended=True, reason=BUDGET_EXCEEDED,
                       message=_message(final), session_id=session)
    if _failed(final):
        message = _message(final)
        status = as_number(final.get("api_error_status"))
        kind = _last_error(events)
        reason = reason_of(int(status) if status is not None else (kind[0] if kind else None),
                           f"{message} {kind[1] if kind else ''}")
        return Outcome(None, True, usage, ended=True, reason=reason, message=message,
                       retry_at=retry_at, retry_after=retry_delay(message), session_id=session)
    if not text or not text.strip():
        return Outcome(None, True, usage, ended=True, reason=EMPTY_ANSWER,
                       message="the result carried no answer", session_id=session)
    return Outcome(text, False, usage, ended=True, session_id=session)


_KINDS: Final = {"authentication_failed": 401, "billing_error": 403, "rate_limit": 429, "overloaded": 529,
                        "server_error": 500}


def _last_error(events: list[dict[str, Any]]) -> tuple[int | None, str] | None:
    """(HTTP status, error kind) of the last API error the stream named: an `api_retry`, or an
    assistant message marked with `error` (its text is the vendor's message)."""
    found: tuple[int | None, str] | None = None
    for event in events:
        kind = as_text(event.get("error"))
        if event["type"] == "system" and event.get("subtype") == "api_retry":
            status = as_number(event.get("error_status"))
            found = (int(status) if status is not None else _KINDS.get(kind), kind)
        elif event["type"] == "assistant" and kind:
            text = " ".join(as_text(b.get("text")) for b in _blocks(event))
            found = (_KINDS.get(kind) if kind != "server_error" else None, f"{kind} {text}")
    return found


def _reset(events: list[dict[str, Any]]) -> str | None:
    """When a rejected rate limit resets: the last `rate_limit_event` whose status is `rejected`
    (`rate_limit_info.resetsAt`, seconds since the epoch)."""
    found = None
    for event in events:
        info = as_dict(event.get("rate_limit_info"))
        if event["type"] == "rate_limit_event" and info.get("status") == "rejected":
            moment = as_number(info.get("resetsAt"))
            if moment is not None and 0 < moment < 1e11:
                found = iso(datetime.fromtimestamp(moment, UTC))
    return found


def ask_arguments(servers: Mapping[str, Any]) -> list[str]:
    """Claude Code takes li's permission-prompt tool as a stdio MCP server named in `--mcp-config`."""
    import json

    return ["--mcp-config", json.dumps({"mcpServers": dict(servers)})]


# -- for a budget --------------------------------------------------------------------------------

def spend(event: dict[str, Any]) -> Report | None:
    """Every `assistant` event carries the usage of its API message (`message_start`'s: input and
    cache tokens exact, output a placeholder), counted once by the message's id at its largest;
    the closing `result` carries the exact totals and the cost. So li stops Claude Code within one
    model turn of a token limit; a dollar limit is also handed to it (`--max-budget-usd`), which
    stops at its own next turn."""
    kind = event.get("type")
    if kind == "assistant":
        message = event.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("usage"), dict):
            return None
        return Report(billed_tokens(message["usage"]), message=str(message.get("id") or "") or None)
    if kind == "result" and isinstance(event.get("usage"), dict) and "stats" not in event:
        return Report(billed_tokens(event["usage"]), price(event.get("total_cost_usd")), final=True)
    return None


CLI: Final = AgentCli(
    name=NAME, executable="claude", arguments=arguments, permission_flags=PERMISSION_FLAGS, resume=("--resume",),
    owns=owns, beats=beats, outcome=outcome, asks=True, prompts="--permission-prompt-tool", ask_arguments=ask_arguments,
    root_refusal=root_refusal, reports_tokens=True, reports_cost=True, cost_flag="--max-budget-usd", spend=spend,
    doctor=DoctorProbe("claude", "install the claude CLI to run `li agent claude ...`; other providers still work"),
)
