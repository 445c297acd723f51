"""`li job list`: newest first, bounded (D6)."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from entrypoints.verbs._common import this, unbuilt


def register(sub: Any) -> None:
    parser = sub.add_parser("list", help="list runs, newest first")
    parser.add_argument("--limit", help="at most this many rows (default 50, max 1000)")
    parser.add_argument("--status", help="only rows whose status is exactly this")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    unbuilt("li job list")
