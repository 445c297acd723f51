"""`li job approvals`: the permission requests that wait for a person, across runs (issue 42)."""

from __future__ import annotations

import json
import sys
from argparse import Namespace
from typing import Any

from lionrun.entrypoints.verbs._common import this


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("approvals", help="the permission requests waiting for an answer (--permission-mode ask)",
                            description="List the open permission requests of every run under --permission-mode ask: "
                                        "the run, the request id, the tool and its input. Answer with "
                                        "li job approve RUN [REQUEST] or li job deny RUN [REQUEST].")
    parser.set_defaults(verb=this(__name__))


def service() -> Any:
    from lionrun.application.approvals import ApprovalService
    from lionrun.entrypoints.container import get_container

    return ApprovalService(get_container().core.store(), get_container().core.clock())


def wire(rows: list[dict[str, Any]]) -> dict[str, Any]:
    from lionrun.domain.wire import ApprovalsData, ApprovalValue

    data: dict[str, Any] = ApprovalsData(approvals=[ApprovalValue.of(row) for row in rows]).to_wire()
    return data


def run(args: Namespace) -> dict[str, Any]:
    return wire(service().open())


def show(row: dict[str, Any]) -> str:
    """One request for a person: run, id, tool, its input on one line (control characters made visible)."""
    from lionrun.domain.run import printable

    given = json.dumps(row["input"], sort_keys=True, ensure_ascii=False)
    state = f"{row['behavior']} ({row['answered_by']})" if row.get("behavior") else f"asked {row['requested_at']}"
    return printable(f"{row['run_id']} {row['id']} {row['tool']} {given[:300]}  {state}")


def human(args: Namespace) -> int:
    rows = run(args)["approvals"]
    if not rows:
        print("no permission request waits for an answer")
        return 0
    for row in rows:
        print(show(row))
    print("answer: li job approve RUN REQUEST · li job deny RUN REQUEST [--reason TEXT]", file=sys.stderr)
    return 0
