"""`li job prune`: remove runs that recorded an end; never a running, preparing or orphaned one."""

from __future__ import annotations

import sys
from argparse import Namespace
from collections import Counter
from typing import Any

from lionrun.entrypoints.verbs._common import StoreLocked, this


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("prune", help="remove ended runs")
    parser.add_argument("--older-than", metavar="AGE",
                        help="only runs that ended at least AGE ago: days (0.5), or as --since takes it "
                             "(30m, 2h, 7d, an ISO time); default 0: every ended run")
    parser.add_argument("--branches", action="store_true",
                        help="also delete each removed run's branch li/RUN_ID (li/RUN_ID.LEG for each leg: a --worktree run's commits)")
    parser.add_argument("--dry-run", action="store_true", help="say what would be removed, remove nothing")
    parser.set_defaults(verb=this(__name__))


def older_than(value: str | None) -> float:
    """AGE as days: a finite number >= 0, or a duration / ISO time as --since takes it; anything
    else is refused, never clamped."""
    if value is None:
        return 0.0
    from datetime import UTC, datetime

    from lionrun.domain.run import older_than_days

    return older_than_days(value, datetime.now(UTC))


def run(args: Namespace) -> dict[str, Any]:
    days = older_than(args.older_than)
    from lionrun.entrypoints.container import get_container

    with StoreLocked(get_container().core.home(), reads_only=args.dry_run):  # one prune at a time; a dry run too
        data: dict[str, Any] = _with_branches(get_container().upkeep.pruner(), args).prune(days, dry_run=args.dry_run).to_wire()
    return data


def human(args: Namespace) -> int:
    return show(run(args), args)


def show(data: dict[str, Any], args: Namespace) -> int:
    out, removed = sys.stdout, data["removed"]
    verb = "would remove" if data["dry_run"] else "removed"
    for run_id in removed:
        out.write(f"{verb} {run_id}\n")
    for kept in data["kept"]:
        if kept["reason"] in ("record_unusable", "busy", "remove_failed"):
            out.write(f"kept {kept['run_id']}: {kept['reason']} ({kept['detail']})\n")
    reasons = Counter(k["reason"] for k in data["kept"])
    why = ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in sorted(reasons.items()))
    plural = "" if len(removed) == 1 else "s"
    out.write(f"{verb.capitalize()} {len(removed)} ended run{plural}; kept {len(data['kept'])}"
              f"{f' ({why})' if why else ''}.\n")
    return 0


def _with_branches(pruner: Any, args: Namespace) -> Any:
    """`--branches`: a removed run's worktree goes with its branch; without it the branch stays."""
    pruner.branches = bool(getattr(args, "branches", False))
    return pruner
