"""`li job apply RUN_ID`: a run's changes into the current worktree, not committed."""

from __future__ import annotations

import os
import sys
from argparse import Namespace
from typing import Any

from lionrun.entrypoints.verbs._common import run_id_arg, this


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("apply", help="apply a --worktree run's changes here, without committing",
                            description="Apply the run's changes to the working tree of the git worktree you are "
                                        "in (or --cwd), without committing; refused when they do not apply or "
                                        "touch a file with uncommitted changes of yours. The branch li/RUN_ID "
                                        "stays for git merge. A run of several legs needs --leg LEG: that "
                                        "leg's change (branch li/RUN_ID.LEG).")
    parser.add_argument("run_id", metavar="RUN_ID")
    parser.add_argument("--cwd", help="the worktree to apply to (default: here)")
    parser.add_argument("--leg", metavar="LEG", help="the leg (or step) whose change to apply, of a run of several legs")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    from lionrun.entrypoints.container import get_container
    from lionrun.entrypoints.verbs._submit import resolve_cwd

    target = resolve_cwd(args.cwd)
    result: dict[str, Any] = get_container().upkeep.reviews().apply(run_id_arg(args, args.run_id), target,
                                                      getattr(args, "leg", None))
    return result


def human(args: Namespace) -> int:
    data = run(args)
    whose = data["run_id"] if data.get("leg") is None else f"{data['run_id']} leg {data['leg']}"
    if not data["applied"]:
        print(f"{whose} left no changes; nothing applied")
        return 0
    count = len(data["files"])
    print(f"applied the changes of {whose} to {os.path.relpath(data['target']) if data['target'] else '.'}: "
          f"{count} file{'s' if count != 1 else ''} (not committed)", file=sys.stdout)
    return 0
