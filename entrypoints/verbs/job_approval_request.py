"""`li job approval-request`: what li's permission-prompt tool runs for the agent.

Reads `{"tool_name", "input", "tool_use_id"}` on stdin, records the request on the run this `li`
acts for (`LI_ACTING_FOR`, set by the run's broker for confined work) or runs in (`LI_RUN_ID`),
waits for a person's answer (at most `--timeout` seconds, then denies it) and prints the answer
text Claude Code expects: `{"behavior": "allow", "updatedInput": {...}}` or `{"behavior":
"deny", "message": "..."}`. Not for people: the tool calls it.
"""

from __future__ import annotations

import json
import os
import sys
from argparse import Namespace
from typing import Any

from lionrun.entrypoints.verbs._common import this

INPUT_MAX = 1 << 20


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("approval-request", help="(for li's permission-prompt tool) ask a person and wait")
    parser.add_argument("--timeout", metavar="SECONDS", help="deny after this long without an answer (default 600)")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    from lionrun.application.approvals import ApprovalService
    from lionrun.domain.approval import DEFAULT_TIMEOUT, parse_timeout
    from lionrun.domain.request import invalid
    from lionrun.domain.run import is_run_id
    from lionrun.entrypoints.container import get_container

    run_id = os.environ.get("LI_ACTING_FOR") or os.environ.get("LI_RUN_ID") or ""
    if not is_run_id(run_id):
        raise invalid("li job approval-request is asked by a run's permission-prompt tool, inside the run")
    raw = sys.stdin.read(INPUT_MAX + 1) if sys.stdin is not None else ""
    try:
        asked = json.loads(raw)
    except ValueError:
        asked = None
    if not isinstance(asked, dict) or len(raw) > INPUT_MAX:
        raise invalid("li job approval-request takes {tool_name, input, tool_use_id} as JSON on stdin")
    timeout = DEFAULT_TIMEOUT if args.timeout is None else parse_timeout(args.timeout, "--timeout")
    tool_use = asked.get("tool_use_id")
    store = get_container().core.store()
    store = getattr(store, "own_record", store)  # acting for the run's work: its own record, no other run's
    text = ApprovalService(store, get_container().core.clock()).ask(run_id, str(asked.get("tool_name") or "tool"), asked.get("input"),
                         tool_use if isinstance(tool_use, str) else None, timeout)
    return {"answer": text}


def human(args: Namespace) -> int:
    print(run(args)["answer"])
    return 0
