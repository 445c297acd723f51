"""`li job approve RUN [REQUEST]`: let the agent use the tool it asked for."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from lionrun.entrypoints.verbs._common import this

BEHAVIOR = "allow"


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("approve", help="allow a run's open permission request (all of them without REQUEST)")
    parser.add_argument("run_id", metavar="RUN_ID")
    parser.add_argument("request", nargs="?", metavar="REQUEST", help="the request id (a1, a2, ...); default: every open one")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    from lionrun.entrypoints.verbs._approvals import answer

    return answer(args, BEHAVIOR, None)


def human(args: Namespace) -> int:
    from lionrun.entrypoints.verbs._approvals import show

    for row in run(args)["approvals"]:
        print(show(row))
    return 0
