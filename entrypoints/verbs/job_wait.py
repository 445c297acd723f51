"""`li job wait RUN_ID...`: bounded observation (D10)."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from entrypoints.verbs._common import this, unbuilt


def register(sub: Any) -> None:
    parser = sub.add_parser("wait", help="wait for runs to end, within a bounded window")
    parser.add_argument("run_ids", nargs="*", metavar="RUN_ID", help="run ids; - reads them from stdin")
    parser.add_argument("--max-wait", help="seconds to wait at most (0..600, default 60; 0 is a snapshot)")
    parser.add_argument("--poll-interval", help="seconds between observations (0.05..60, default 1)")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    unbuilt("li job wait")
