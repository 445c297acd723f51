"""`li job prune`: remove runs that recorded an end; never a running, preparing or orphaned one."""

from __future__ import annotations

import math
import sys
from argparse import Namespace
from collections import Counter
from typing import Any

from domain.contract import ContractError, ErrorKind
from entrypoints.verbs._common import this


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("prune", help="remove ended runs")
    parser.add_argument("--older-than", metavar="DAYS",
                        help="only runs that ended at least DAYS ago (default 0: every ended run)")
    parser.add_argument("--dry-run", action="store_true", help="say what would be removed, remove nothing")
    parser.set_defaults(verb=this(__name__))


def older_than(value: str | None) -> float:
    """DAYS as a finite number >= 0; anything else is refused, never clamped."""
    if value is None:
        return 0.0
    try:
        days = float(value)
    except ValueError:
        days = math.nan
    if not math.isfinite(days) or days < 0:
        raise ContractError(ErrorKind.INVALID_INPUT, f"--older-than must be a number of days >= 0, not {value!r}",
                            {"older_than": value})
    return days


def run(args: Namespace) -> dict[str, Any]:
    days = older_than(args.older_than)
    from entrypoints import services

    data: dict[str, Any] = services.pruner().prune(days, dry_run=args.dry_run).to_wire()
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
