"""The `li` argument parser, built from the verb table. Standard library only."""

from __future__ import annotations

import argparse
from typing import NoReturn

from entrypoints.verbs import VERB_TABLE
from entrypoints.verbs._common import register_table

# Verbs that need every verb registered whatever the request: completion walks the whole tree.
WHOLE_TREE = frozenset({"completion"})


class UsageError(Exception):
    """Bad arguments: `invalid_input` under --machine, exit 2 for a person."""

    def __init__(self, message: str, usage: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.usage = usage


class HelpRequested(Exception):
    """`--help` was asked for; the text is the answer."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of printing and exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.format_usage())

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise UsageError(message or f"exit {status}", self.format_usage())

    def print_help(self, file: object = None) -> None:
        raise HelpRequested(self.format_help())


def build_parser(args: list[str] | None = None) -> Parser:
    """The command tree; the root's `tree` default hands it to a verb that walks it
    (`li completion`), so no verb imports this module back.

    Given the request's words, only the verb they name is imported and registered in full, the
    others by name (`register_table`); completion walks the whole tree, so it gets it.
    """
    parser = Parser(prog="li", description="Run agent work as detached, durable runs.",
                    epilog="Add --machine anywhere for one JSON envelope on stdout.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    register_table(sub, VERB_TABLE, args, whole=WHOLE_TREE, skip=("--version",))
    parser.set_defaults(tree=parser)
    return parser
