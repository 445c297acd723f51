"""`li job diff RUN_ID`: the changes a run's work left in its own worktree, against its base."""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from lionrun.entrypoints.verbs._common import run_id_arg, this


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("diff", help="the changes a --worktree run committed, against its base",
                            description="git's diff of the run's commit on li/RUN_ID against the commit its "
                                        "worktree started from, read from the run's changes.patch artifact. "
                                        "A run of several legs shows each leg's change (branch "
                                        "li/RUN_ID.LEG), or the one --leg names.")
    parser.add_argument("run_id", metavar="RUN_ID")
    parser.add_argument("--stat", action="store_true", help="only the files and line counts")
    parser.add_argument("--leg", metavar="LEG", help="one leg's (or step's) change, of a run of several legs")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    from lionrun.entrypoints.container import get_container

    result: dict[str, Any] = get_container().upkeep.reviews().diff(run_id_arg(args, args.run_id), getattr(args, "leg", None))
    return result


def human(args: Namespace) -> int:
    data = run(args)
    if data.get("legs") is not None:
        return human_legs(args, data)
    whose = data["run_id"] if data.get("leg") is None else f"{data['run_id']} leg {data['leg']}"
    return show(args, data, whose)


def show(args: Namespace, data: dict[str, Any], whose: str) -> int:
    """One change (the run's, or one leg's) as git shows it, or its --stat."""
    patch, files = data["patch"], data["files"]
    if not patch["available"]:
        print(f"li: the changes of {whose} are unavailable ({patch['reason_code']}): {patch['detail']}",
              file=sys.stderr)
        return 1
    if data["recovered"]:
        print(f"li: {whose} ended without committing; li committed its worktree's changes now", file=sys.stderr)
    if args.stat:
        rows = files["value"] or []
        for row in rows:
            counts = "binary" if row["insertions"] is None else f"+{row['insertions']} -{row['deletions']}"
            print(f" {row['path']}  {counts}")
        changes = data["changes"] or {}
        print(f" {len(rows)} file{'s' if len(rows) != 1 else ''} changed, {changes.get('insertions', 0)} insertions(+), "
              f"{changes.get('deletions', 0)} deletions(-)")
        return 0
    sys.stdout.write(patch["value"])
    return 0


def human_legs(args: Namespace, data: dict[str, Any]) -> int:
    """Every leg's change in turn, each under a line naming the leg and its branch."""
    code = 0
    for leg in data["legs"]:
        sys.stdout.write(f"# {leg['leg']}: {leg['worktree']['branch']}\n")
        sys.stdout.flush()
        code = max(code, show(args, leg, f"{data['run_id']} leg {leg['leg']}"))
        sys.stdout.flush()
    return code
