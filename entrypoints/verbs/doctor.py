"""`li doctor`: check what a run needs."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from entrypoints.verbs._common import this, unbuilt


def register(sub: Any) -> None:
    parser = sub.add_parser("doctor", help="check that runs can be started and observed here")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    unbuilt("li doctor")
