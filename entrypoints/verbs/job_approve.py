"""`li job approve RUN [REQUEST]`: let the agent use the tool it asked for (issue 42)."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from lionrun.entrypoints.verbs._common import run_id_arg, this

BEHAVIOR = "allow"


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("approve", help="allow a run's open permission request (all of them without REQUEST)")
    parser.add_argument("run_id", metavar="RUN_ID")
    parser.add_argument("request", nargs="?", metavar="REQUEST", help="the request id (a1, a2, ...); default: every open one")
    parser.set_defaults(verb=this(__name__))


def answer(args: Namespace, behavior: str, message: str | None) -> dict[str, Any]:
    import getpass

    from lionrun.domain.approval import check_request_id
    from lionrun.entrypoints.verbs.job_approvals import service, wire

    run_id = run_id_arg(args, args.run_id)
    request = None if args.request is None else check_request_id(args.request)
    try:
        who = getpass.getuser()
    except (KeyError, OSError):
        who = "li"
    return wire(service().answer(run_id, request, behavior, message, f"li ({who})"))


def run(args: Namespace) -> dict[str, Any]:
    return answer(args, BEHAVIOR, None)


def human(args: Namespace) -> int:
    from lionrun.entrypoints.verbs.job_approvals import show

    for row in run(args)["approvals"]:
        print(show(row))
    return 0
