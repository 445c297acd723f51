"""`li job prune`: remove runs that recorded an end."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from entrypoints.verbs._common import this, unbuilt


def register(sub: Any) -> None:
    parser = sub.add_parser("prune", help="remove ended runs")
    parser.add_argument("--older-than", help="only runs that ended more than DAYS ago")
    parser.add_argument("--dry-run", action="store_true", help="say what would be removed")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    unbuilt("li job prune")
