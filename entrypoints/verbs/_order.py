"""`--after RUN[:ok|:fail|:any]` and `--priority N`, shared by every submit verb; read by
`application.requests.order_option`."""

from __future__ import annotations

from typing import Any


def add_order_options(parser: Any) -> None:
    """The options that place a run among others: what it waits for, and its priority in its queue."""
    parser.add_argument("--after", action="append", metavar="RUN[:ok|:fail|:any]",
                        help="start only once RUN ended: ok (default) succeeded, fail any other end, any "
                             "ended at all; a run that ends otherwise ends this one (dependency_failed). "
                             "Repeatable; RUN may be its last 4-6 hex digits or @last")
    parser.add_argument("--priority", metavar="N",
                        help="within its queue, a higher priority starts first (default 0; equal ones "
                             "start in submission order)")
