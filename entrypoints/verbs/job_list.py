"""`li job list`: newest first, bounded, and says when truncated (D6)."""

from __future__ import annotations

import sys
from argparse import Namespace
from datetime import datetime
from typing import Any

from entrypoints.style import outcome_colour, paint
from entrypoints.verbs._common import this
from entrypoints.verbs.job_status import human_age

COLUMNS = ("RUN ID", "KIND", "LABEL", "STATUS", "OUTCOME", "AGE")


def register(sub: Any) -> None:
    parser = sub.add_parser("list", help="list runs, newest first")
    parser.add_argument("--limit", help="at most this many rows (default 50, max 1000)")
    parser.add_argument("--status", help="only rows whose status is exactly this")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    from application.reads import LIMIT_DEFAULT, LIMIT_MAX, bounded_count
    from entrypoints.container import get_container

    limit = bounded_count(args.limit, "--limit", LIMIT_DEFAULT, LIMIT_MAX, minimum=1)
    result: dict[str, Any] = get_container().reads.reads().listing(limit, args.status)
    return result


def human(args: Namespace) -> int:
    return show(run(args), args)


def show(data: dict[str, Any], args: Namespace) -> int:
    """An aligned table; colour only on a terminal and only when NO_COLOR is unset or empty."""
    from entrypoints.container import get_container

    now = get_container().core.clock().now()
    rows = [_cells(row, now) for row in data["runs"]]
    widths = [max(len(line[i]) for line in [list(COLUMNS), *(cells for cells, _ in rows)]) for i in range(6)]
    print(_line(list(COLUMNS), widths, "bold"))
    for cells, tone in rows:
        print(_line(cells, widths, tone))
    if data["truncated"]:
        print(f"(showing the newest {data['limit']}; more runs exist — use --limit)", file=sys.stderr)
    return 0


def _cells(row: dict[str, Any], now: datetime) -> tuple[list[str], str | None]:
    if row["error"] is not None:
        error = row["error"]
        return [row["run_id"], "?", "", f"unreadable ({error['reason_code']})", "-", "-"], "red"
    age = _age(row["submitted_at"], now)
    outcome = row["outcome"] or "-"
    status = row["status"] + (" (possibly orphaned)" if row["possibly_orphaned"] else "")
    tone = outcome_colour(row["outcome"]) if row["outcome"] is not None else None
    return [row["run_id"], row["kind"], row["label"] or "", status, outcome, age], tone


def _line(cells: list[str], widths: list[int], tone: str | None) -> str:
    """One row, padded before painting so escape codes never disturb the alignment."""
    padded = [cell.ljust(width) for cell, width in zip(cells, widths, strict=True)]
    if tone == "bold":
        padded = [paint(cell, "bold", sys.stdout) for cell in padded]
    else:
        padded[3] = paint(padded[3], tone, sys.stdout)
    return "  ".join(padded).rstrip()


def _age(submitted_at: str, now: datetime) -> str:
    try:
        return human_age((now - datetime.fromisoformat(submitted_at)).total_seconds())
    except (TypeError, ValueError):
        return "?"
