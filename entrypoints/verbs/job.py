"""`li job ...`: read, wait on, kill and prune runs (D6, D10)."""

from __future__ import annotations

from argparse import Namespace
from typing import TYPE_CHECKING, Any

from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.entrypoints.startup.lazy_verbs import register_table
from lionrun.entrypoints.verb_table import summary
from lionrun.entrypoints.verbs._common import this

# (subcommand, module), in the order `li job --help` lists them; imported when named (start-up).
SUB_TABLE: tuple[tuple[str, str], ...] = (
    ("status", "lionrun.entrypoints.verbs.job_status"),
    ("output", "lionrun.entrypoints.verbs.job_output"),
    ("list", "lionrun.entrypoints.verbs.job_list"),
    ("kill", "lionrun.entrypoints.verbs.job_kill"),
    ("wait", "lionrun.entrypoints.verbs.job_wait"),
    ("prune", "lionrun.entrypoints.verbs.job_prune"),
    ("retry", "lionrun.entrypoints.verbs.job_retry"),
    ("rm", "lionrun.entrypoints.verbs.job_rm"),
    ("diff", "lionrun.entrypoints.verbs.job_diff"),
    ("apply", "lionrun.entrypoints.verbs.job_apply"),
    ("reply", "lionrun.entrypoints.verbs.job_reply"),
    ("approvals", "lionrun.entrypoints.verbs.job_approvals"),
    ("approve", "lionrun.entrypoints.verbs.job_approve"),
    ("deny", "lionrun.entrypoints.verbs.job_deny"),
    ("approval-request", "lionrun.entrypoints.verbs.job_approval_request"),
)


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("job", help=summary("job"))
    verbs = parser.add_subparsers(dest="job_command", metavar="SUBCOMMAND")
    register_table(verbs, SUB_TABLE, words)
    parser.set_defaults(verb=this(__name__))


if TYPE_CHECKING:  # mypy holds every module of the table to the Verb protocol
    from lionrun.entrypoints.verbs import (
        job_apply,
        job_approval_request,
        job_approvals,
        job_approve,
        job_deny,
        job_diff,
        job_kill,
        job_list,
        job_output,
        job_prune,
        job_reply,
        job_retry,
        job_rm,
        job_status,
        job_wait,
    )
    from lionrun.entrypoints.verbs._common import Verb

    _CHECKED: tuple[Verb, ...] = (job_status, job_output, job_list, job_kill, job_wait, job_prune, job_retry,
                                 job_rm, job_diff, job_apply, job_reply, job_approvals, job_approve, job_deny,
                                 job_approval_request)


def run(args: Namespace) -> dict[str, Any]:
    raise ContractError(ErrorKind.INVALID_INPUT, "li job needs a subcommand: status, output, list, kill, wait, prune, retry, rm, diff, apply, reply, "
                                                   "approvals, approve, deny")


def human(args: Namespace) -> int:
    """Bare `li job`: its help (the subcommands), exit 0."""
    from lionrun.entrypoints.verbs._common import print_help

    if print_help(args, "job") == 0:
        return 0
    run(args)  # no parser to show: refused, with invalid_input's exit status
    return 2
