"""`li completion bash|zsh`: shell completion generated from the parser."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from entrypoints.verbs._common import this, unbuilt


def register(sub: Any) -> None:
    parser = sub.add_parser("completion", help="print a bash or zsh completion script")
    parser.add_argument("shell", choices=["bash", "zsh"])
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    unbuilt("li completion")
