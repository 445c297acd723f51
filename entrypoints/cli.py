"""The `li` argument parser, built from the verb table. Standard library only."""

from __future__ import annotations

import argparse

from lionrun.entrypoints.startup.lazy_formatter import Formatter
from lionrun.entrypoints.startup.lazy_verbs import register_table
from lionrun.entrypoints.usage import HelpRequested, UsageError
from lionrun.entrypoints.verb_table import VERB_TABLE

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: a handshake never loads it
if TYPE_CHECKING:
    from typing import Any, NoReturn

# Verbs that need every verb registered whatever the request: completion walks the whole tree.
WHOLE_TREE = frozenset({"completion"})


class Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of printing and exiting."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", Formatter)
        super().__init__(*args, **kwargs)

    words: list[str] | None = None  # the request's words, on the root parser (to find the verb named)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if args is not None:
            self.words = list(args)  # an error names the verb these words name (`explain`)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        raise UsageError(explain(self, message), self.format_usage())

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


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """A parser's subcommands by name (empty when it has none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def named_by(parser: argparse.ArgumentParser, words: list[str]) -> argparse.ArgumentParser:
    """The deepest parser the words name (`li job list --lmit` → `li job list`)."""
    for word in words:
        if word == "--":
            break
        child = subcommands(parser).get(word)
        if child is not None:
            parser = child
    return parser


def options_of(parser: argparse.ArgumentParser) -> list[str]:
    return [option for action in parser._actions for option in action.option_strings if option.startswith("--")]


PROMPT_VERBS = ("li agent", "li orchestrate fanout")


def explain(parser: Parser, message: str) -> str:
    """argparse's message in li's words, with a "did you mean" and where the help is.

    Only on the error path: difflib and re are imported here, never by a request that parses.
    """
    import re

    from lionrun.domain.suggest import did_you_mean

    message = message.strip()
    choice = re.search(r"invalid choice: (.+?) \(choose from", message)
    if choice is not None:
        bad = choice.group(1).strip("'\"")
        known = list(subcommands(parser))
        what = "command" if parser.prog == "li" else "subcommand"
        where = "" if parser.prog == "li" else f"{parser.prog}: "
        return (f"{where}unknown {what} {bad!r}{did_you_mean(bad, known)} "
                f"(known: {', '.join(known)}; see `{parser.prog} --help`)")
    target = named_by(parser, parser.words or []) if parser.prog == "li" else parser
    extra = re.match(r"unrecognized arguments: (.*)", message, re.S)
    if extra is not None:
        words = extra.group(1).split()
        option = next((w.split("=", 1)[0] for w in words if w.startswith("--")), None)
        hint = did_you_mean(option, options_of(target)) if option is not None else ""
        if not hint and target.prog in PROMPT_VERBS and any(w.startswith("-") for w in words):
            hint = (f"; quote a prompt that holds words beginning with - ({target.prog} sh 'ls -la'), "
                    "or put -- before it")
        where = "" if target.prog == "li" else f"{target.prog}: "
        return f"{where}unrecognized arguments: {' '.join(words)}{hint} (see `{target.prog} --help`)"
    where = "" if target.prog == "li" else f"{target.prog}: "
    return f"{where}{message} (see `{target.prog} --help`)"
