"""`--after RUN[:ok|:fail|:any]` and `--priority N` (issue 43), shared by every submit verb."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lionrun.domain.dependencies import Order


def add_order_options(parser: Any) -> None:
    """The options that place a run among others: what it waits for, and its priority in its queue."""
    parser.add_argument("--after", action="append", metavar="RUN[:ok|:fail|:any]",
                        help="start only once RUN ended: ok (default) succeeded, fail any other end, any "
                             "ended at all; a run that ends otherwise ends this one (dependency_failed). "
                             "Repeatable; RUN may be its last 4-6 hex digits or @last")
    parser.add_argument("--priority", metavar="N",
                        help="within its queue, a higher priority starts first (default 0; equal ones "
                             "start in submission order)")


def order_option(args: Any) -> Order | None:
    """The run's place among others from `--after` and `--priority` (None: neither given). A person
    may name a run by its short id or @last; --machine takes whole ids."""
    after = getattr(args, "after", None) or []
    priority = getattr(args, "priority", None)
    if not after and priority is None:
        return None
    from lionrun.domain.dependencies import Order, check_priority, dependencies, split_after
    from lionrun.entrypoints.verbs._common import run_id_arg

    pairs = []
    for text in after:
        ref, condition = split_after(text)
        pairs.append((run_id_arg(args, ref), condition))
    return Order(after=tuple(dependencies(pairs)), priority=0 if priority is None else check_priority(priority))
