"""Approvals: a permission request an agent CLI hands li, answered by a person.

Under `--permission-mode ask` Claude Code calls li's permission-prompt tool before each tool use it
would otherwise ask about. Each request is recorded on the run (`Run.approvals`, written under the
store's fence), the run reads `waiting_approval` while one is open (non-terminal: D10 keeps it
pending), and the answer is what Claude Code expects back: one text block whose text is JSON,
`{"behavior": "allow", "updatedInput": {...}}` or `{"behavior": "deny", "message": "..."}`.
A request nobody answers within the run's approval timeout is denied, and the agent is told why.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from lionrun.domain.contract import ContractError, ErrorKind

WAITING_APPROVAL: Final = "waiting_approval"  # the status of a run with an open request (non-terminal)
RUNNING: Final = "running"
ALLOW: Final = "allow"
DENY: Final = "deny"
TIMED_OUT: Final = "approval_timeout"  # who answered a request nobody answered in time
DEFAULT_TIMEOUT: Final = 600.0  # seconds a request waits for a person before it is denied
MAX_TIMEOUT: Final = 7 * 24 * 3600.0
INPUT_MAX: Final = 16 * 1024  # characters of a request's input kept (the agent's own input is answered back whole)
OPEN_MAX: Final = 64  # requests one run may have open at once
KEPT_MAX: Final = 256  # requests one run's record keeps (the oldest answered are dropped first)
SERVER: Final = "li"  # the MCP server's name in the CLI's config: the tool is mcp__li__approve
TOOL: Final = "approve"
PROMPT_TOOL: Final = f"mcp__{SERVER}__{TOOL}"
_ID: Final = re.compile(r"^a[0-9]{1,6}$")


def _invalid(message: str, **detail: Any) -> ContractError:
    return ContractError(ErrorKind.INVALID_INPUT, message, detail or None)


def parse_timeout(value: object, where: str = "--approval-timeout") -> float:
    """Seconds a request waits for an answer: above 0, at most a week."""
    try:
        seconds = float(value) if isinstance(value, int | float | str) and not isinstance(value, bool) else -1.0
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= MAX_TIMEOUT or seconds != seconds:
        raise _invalid(f"{where} must be a number of seconds above 0 and at most {MAX_TIMEOUT:.0f}", argument=where)
    return seconds


def check_request_id(value: str) -> str:
    if not _ID.fullmatch(value):
        raise _invalid(f"{value[:40]!r} is not an approval request id (a1, a2, ...)", request=value[:40])
    return value


def open_requests(approvals: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The requests not answered yet, oldest first."""
    return [a for a in approvals or [] if isinstance(a, dict) and a.get("behavior") is None]


def requested(approvals: list[dict[str, Any]] | None, tool: str, tool_input: object, tool_use_id: str | None,
              now: str) -> tuple[list[dict[str, Any]], str]:
    """The approvals with a new open request appended, and its id. Refused when too many are open."""
    kept = [a for a in approvals or [] if isinstance(a, dict)]
    if len(open_requests(kept)) >= OPEN_MAX:
        raise _invalid(f"the run has {OPEN_MAX} approval requests open already")
    number = 1 + max((int(a["id"][1:]) for a in kept if isinstance(a.get("id"), str) and _ID.fullmatch(a["id"])),
                     default=0)
    shown = json.dumps(tool_input, sort_keys=True, default=str)
    ident = f"a{number}"
    entry = {"id": ident, "tool": str(tool)[:200], "input": tool_input if len(shown) <= INPUT_MAX else
             {"truncated": shown[:INPUT_MAX]}, "tool_use_id": tool_use_id, "requested_at": now,
             "behavior": None, "message": None, "answered_at": None, "answered_by": None}
    kept.append(entry)
    while len(kept) > KEPT_MAX:
        done = next((i for i, a in enumerate(kept) if a.get("behavior") is not None), None)
        if done is None:
            break
        kept.pop(done)
    return kept, ident


def answered(approvals: list[dict[str, Any]] | None, request: str | None, behavior: str, message: str | None,
             by: str, now: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The approvals with `request` (None: every open one) answered; the ids answered (none: it
    was not open — answered already, or never asked)."""
    kept = [dict(a) for a in approvals or [] if isinstance(a, dict)]
    ids = []
    for entry in kept:
        if entry.get("behavior") is None and (request is None or entry.get("id") == request):
            entry.update(behavior=behavior, message=message, answered_at=now, answered_by=by)
            ids.append(str(entry.get("id")))
    return kept, ids


def status_after(status: str, approvals: list[dict[str, Any]] | None) -> str:
    """A live run's status beside its requests: waiting_approval while one is open, else running."""
    if status not in (RUNNING, WAITING_APPROVAL):
        return status
    return WAITING_APPROVAL if open_requests(approvals) else RUNNING


def answer_text(entry: dict[str, Any], tool_input: object) -> str:
    """What Claude Code's permission-prompt tool returns: the JSON text of the decision."""
    if entry.get("behavior") == ALLOW:
        return json.dumps({"behavior": ALLOW, "updatedInput": tool_input if isinstance(tool_input, dict) else {}})
    message = entry.get("message") or "denied by a person through li"
    return json.dumps({"behavior": DENY, "message": str(message)})
