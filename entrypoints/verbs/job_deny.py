"""`li job deny RUN [REQUEST] [--reason TEXT]`: refuse the tool the agent asked for."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from lionrun.entrypoints.verbs._common import this

REASON_MAX = 2000


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("deny", help="deny a run's open permission request (all of them without REQUEST)")
    parser.add_argument("run_id", metavar="RUN_ID")
    parser.add_argument("request", nargs="?", metavar="REQUEST", help="the request id (a1, a2, ...); default: every open one")
    parser.add_argument("--reason", metavar="TEXT", help="what the agent is told (default: denied by a person through li)")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    from lionrun.domain.request import invalid
    from lionrun.entrypoints.verbs._approvals import answer

    reason = args.reason
    if reason is not None and (len(reason) > REASON_MAX or "\0" in reason):
        raise invalid(f"--reason is at most {REASON_MAX} characters, no NUL", argument="--reason")
    return answer(args, "deny", reason or "denied by a person through li")


def human(args: Namespace) -> int:
    from lionrun.entrypoints.verbs._approvals import show

    for row in run(args)["approvals"]:
        print(show(row))
    return 0
