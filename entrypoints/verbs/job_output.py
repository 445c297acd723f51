"""`li job output RUN_ID`."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from entrypoints.verbs._common import this, unbuilt


def register(sub: Any) -> None:
    parser = sub.add_parser("output")
    parser.add_argument("run_id", metavar="RUN_ID")
    parser.add_argument("--tail-chars", help="how many characters of the console to return (default 20000)")
    parser.add_argument("--follow", action="store_true", help="stream the console until the run ends")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    unbuilt("li job output")
