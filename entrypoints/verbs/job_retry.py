"""`li job retry RUN_ID`: a new run from the request a run was submitted with (pueue's restart)."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from lionrun.entrypoints.verbs._common import this


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("retry", help="start a new run from a run's recorded request",
                            description="Start a new run with the request RUN_ID was submitted with (its "
                                        "prompt or spec, models, label, working directory, timeout, notify "
                                        "and agent options). The new run records `retry_of`; RUN_ID is untouched.")
    parser.add_argument("run_id", metavar="RUN_ID")
    parser.add_argument("--detach", action="store_true", help="return at once with the new run id")
    from lionrun.entrypoints.verbs._submit import add_idempotency_option

    add_idempotency_option(parser)
    from lionrun.entrypoints.verbs._order import add_order_options

    add_order_options(parser)
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    """Under --machine the answer is the new run's submit handle, as `li agent` gives."""
    from lionrun.entrypoints.verbs._submit import retried_request, submit

    return submit(retried_request(args), args).to_wire()


def human(args: Namespace) -> int:
    from lionrun.entrypoints.verbs._submit import retried_request, submit_for_person

    return submit_for_person(retried_request(args), args)
