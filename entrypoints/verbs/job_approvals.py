"""`li job approvals`: the permission requests that wait for a person, across runs."""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from lionrun.entrypoints.verbs._common import this


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("approvals", help="the permission requests waiting for an answer (--permission-mode ask)",
                            description="List the open permission requests of every run under --permission-mode ask: "
                                        "the run, the request id, the tool and its input. Answer with "
                                        "li job approve RUN [REQUEST] or li job deny RUN [REQUEST].")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    from lionrun.entrypoints.verbs._approvals import service, wire

    return wire(service().open())


def human(args: Namespace) -> int:
    rows = run(args)["approvals"]
    if not rows:
        print("no permission request waits for an answer")
        return 0
    from lionrun.entrypoints.verbs._approvals import show

    for row in rows:
        print(show(row))
    print("answer: li job approve RUN REQUEST · li job deny RUN REQUEST [--reason TEXT]", file=sys.stderr)
    return 0
