"""`li job rm RUN...`: remove named runs that recorded an end (pueue's remove); never a live one."""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from lionrun.entrypoints.verbs._common import StoreLocked, run_id_arg, this


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("rm", help="remove ended runs by id",
                            description="Remove the named runs, each of which must have recorded an end; "
                                        "a run still going is refused (stop it first with li job kill). "
                                        "Nothing is removed unless every named run can be.")
    parser.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    parser.add_argument("--branches", action="store_true",
                        help="also delete each removed run's branch li/RUN_ID (li/RUN_ID.LEG for each leg: a --worktree run's commits)")
    parser.add_argument("--force", action="store_true",
                        help="also remove an ended run whose notice is still being delivered (never a live run)")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    from lionrun.entrypoints.container import get_container

    ids = [run_id_arg(args, word) for word in args.run_ids]
    with StoreLocked(get_container().core.home()):
        data: dict[str, Any] = _with_branches(get_container().upkeep.pruner(), args).remove_named(ids, force=args.force).to_wire()
    return data


def human(args: Namespace) -> int:
    data = run(args)
    for run_id in data["removed"]:
        print(f"removed {run_id}")
    for kept in data["kept"]:
        print(f"kept {kept['run_id']}: {kept['reason']} ({kept['detail']})", file=sys.stderr)
    return 0 if not data["kept"] else 4


def _with_branches(pruner: Any, args: Namespace) -> Any:
    """`--branches`: a removed run's worktree goes with its branch; without it the branch stays."""
    pruner.branches = bool(getattr(args, "branches", False))
    return pruner
