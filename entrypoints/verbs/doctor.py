"""`li doctor`: check what a run needs, and say what to do about each failure."""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from lionrun.entrypoints.style import paint
from lionrun.entrypoints.verb_table import summary
from lionrun.entrypoints.verbs._common import StoreLocked, this

MARKS = {"ok": ("ok", "green"), "error": ("FAIL", "red"), "warning": ("warn", "yellow"),
         "info": ("note", "blue")}


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("doctor", help=summary("doctor"))
    parser.add_argument("--fix", action="store_true",
                        help="repair what doctor can itself first: make the store private "
                             "(folders 0700, files 0600; links are never followed)")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    from lionrun.application.doctor import diagnose
    from lionrun.entrypoints.container import get_container

    cluster = get_container().core.cluster() if slurm_configured() else None
    fix = bool(getattr(args, "fix", False))
    if not fix:
        return diagnose(get_container().upkeep.diagnostics(), admin=get_container().core.store(), cluster=cluster,
                        stale_worktrees=stale_worktrees(), changed_repositories=changed_repositories())
    with StoreLocked(get_container().core.home()):  # the store's modes are tightened by one li at a time
        return diagnose(get_container().upkeep.diagnostics(), fix=True, admin=get_container().core.store(), cluster=cluster,
                        stale_worktrees=stale_worktrees(), changed_repositories=changed_repositories())


def stale_worktrees() -> list[str] | None:
    """li's worktrees whose run is gone; None when git or the store cannot tell."""
    import os

    from lionrun.application.worktrees import stale_worktrees as find
    from lionrun.entrypoints.container import get_container

    try:
        return find(get_container().core.git(), get_container().core.store(), os.getcwd())
    except Exception:  # noqa: BLE001 - doctor reports what it can; this check is advisory
        return None


def changed_repositories() -> list[str] | None:
    """Recent runs whose work changed their repository's shared config or hooks; None
    when the store cannot tell."""
    from lionrun.application.doctor import runs_that_changed_repositories
    from lionrun.entrypoints.container import get_container

    try:
        return runs_that_changed_repositories(get_container().core.store(), get_container().core.clock().now())
    except Exception:  # noqa: BLE001 - doctor reports what it can; this check is advisory
        return None


def slurm_configured() -> bool:
    """Whether config.toml makes Slurm the default executor (a file that cannot be read: no; the
    notify check reports it)."""
    from lionrun.entrypoints.container import get_container

    executor: str | None = get_container().core.settings().entries.executor
    return executor == "slurm"


def human(args: Namespace) -> int:
    return show(run(args), args)


def show(data: dict[str, Any], args: Namespace) -> int:
    """One line per check; a failed one is followed by what to do. Exit 1 when an error failed.
    A line wider than the terminal folds at spaces under its detail (entrypoints.table.fold)."""
    from lionrun.entrypoints.table import fold, stdout_width

    out = sys.stdout
    columns = stdout_width()
    width = max((len(c["name"]) for c in data["checks"]), default=0)
    under = 4 + 2 + width + 2  # where a check's detail starts
    for check in data["checks"]:
        word, colour = MARKS["ok" if check["ok"] else check["severity"]]
        first, *rest = fold(f"{word.ljust(4)}  {check['name'].ljust(width)}  {check['detail']}", columns, under)
        out.write(f"{paint(first[:4], colour, out)}{first[4:]}\n" + "".join(f"{line}\n" for line in rest))
        if not check["ok"] and check["fix"]:
            out.write("".join(f"{line}\n" for line in fold(f"{'':4}  {'':{width}}  fix: {check['fix']}", columns,
                                                             under + len("fix: "))))
    failed = [c for c in data["checks"] if not c["ok"] and c["severity"] == "error"]
    summary = "ready: runs can be started and observed here" if data["ok"] else (
        f"not ready: {len(failed)} check{'s' if len(failed) != 1 else ''} failed")
    out.write(paint(summary, "green" if data["ok"] else "red", out) + "\n")
    return 0 if data["ok"] else 1
