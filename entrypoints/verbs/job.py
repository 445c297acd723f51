"""`li job ...`: read, wait on, kill and prune runs (D6, D10)."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from domain.contract import ContractError, ErrorKind
from entrypoints.verbs import (
    job_kill,
    job_list,
    job_output,
    job_prune,
    job_retry,
    job_status,
    job_wait,
)
from entrypoints.verbs._common import Verb, this

SUBVERBS: tuple[Verb, ...] = (job_status, job_output, job_list, job_kill, job_wait, job_prune, job_retry)


def register(sub: Any) -> None:
    parser = sub.add_parser("job", help="status, output, list, kill, wait, prune, retry")
    verbs = parser.add_subparsers(dest="job_command", metavar="SUBCOMMAND")
    for module in SUBVERBS:
        module.register(verbs)
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    raise ContractError(ErrorKind.INVALID_INPUT, "li job needs a subcommand: status, output, list, kill, wait, prune, retry")


def human(args: Namespace) -> int:
    run(args)  # always refuses: the dispatcher says so on stderr with invalid_input's exit status
    return 2
