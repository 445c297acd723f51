"""What `li job approvals`, `approve` and `deny` (and li serve's buttons) share: the service, its
wire answer, one request shown to a person, and an answer given."""

from __future__ import annotations

import json
from argparse import Namespace
from typing import Any


def service() -> Any:
    from lionrun.application.approvals import ApprovalService
    from lionrun.entrypoints.container import get_container

    return ApprovalService(get_container().core.store(), get_container().core.clock())


def wire(rows: list[dict[str, Any]]) -> dict[str, Any]:
    from lionrun.domain.wire import ApprovalsData, ApprovalValue

    data: dict[str, Any] = ApprovalsData(approvals=[ApprovalValue.of(row) for row in rows]).to_wire()
    return data


def show(row: dict[str, Any]) -> str:
    """One request for a person: run, id, tool, its input on one line (control characters made visible)."""
    from lionrun.domain.run import printable

    given = json.dumps(row["input"], sort_keys=True, ensure_ascii=False)
    state = f"{row['behavior']} ({row['answered_by']})" if row.get("behavior") else f"asked {row['requested_at']}"
    return printable(f"{row['run_id']} {row['id']} {row['tool']} {given[:300]}  {state}")


def answer(args: Namespace, behavior: str, message: str | None) -> dict[str, Any]:
    import getpass

    from lionrun.domain.approval import check_request_id
    from lionrun.entrypoints.verbs._common import run_id_arg

    run_id = run_id_arg(args, args.run_id)
    request = None if args.request is None else check_request_id(args.request)
    try:
        who = getpass.getuser()
    except (KeyError, OSError):
        who = "li"
    return wire(service().answer(run_id, request, behavior, message, f"li ({who})"))
