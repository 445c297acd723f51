"""The parser holds only the verb a request names in full (a start-up measure, README.md here).

Given the request's words, only the verb they name is imported and registered in full, the
others by name: a read loads no other verb's module. tests/unit/test_cli_parser.py holds every
parse to that of the whole tree; tests/e2e/test_startup_imports.py what each verb loads.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Sequence

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: a handshake never loads it
if TYPE_CHECKING:
    from typing import Any

    from lionrun.entrypoints.verbs._common import Verb


def verb_module(module: str) -> Verb:
    """A verb module of a table, imported now if it was not."""
    __import__(module)
    found: Verb = sys.modules[module]  # a module: mypy holds the tables' modules to Verb
    return found


# What argparse reads as `--help` on the root: `-h`, `--help` and its unique abbreviations.
HELP_WORDS = frozenset({"-h", "--h", "--he", "--hel", "--help"})


def register_table(sub: Any, table: Sequence[tuple[str, ...]], words: list[str] | None,
                   whole: Collection[str] = (), skip: Collection[str] = ()) -> None:
    """Register a table of (name, module[, summary]) verbs on a `add_subparsers()` action, in its order.

    Given the request's words (after the parent's name), only the verb they name is imported and
    registered in full; every other one is a bare name, which is all a parse of that request can
    see of it (the choices an unknown word is told about, in the same order); words that name no
    verb at all (none, or only options in `skip`, which are passed over) need none in full. Words
    that ask for help first (`--help`, `-h`, an abbreviation) need each verb's name and summary
    only, when the table carries summaries: argparse prints the help at that word and parses no
    further, so `li --help` imports no verb module.
    Without words (a parser for any request), or when they name a word that is no verb of the
    table, a verb in `whole`, or another option first (`--`, a typo), every verb is registered in full.
    Registering every verb cost a read a floor or two (docs/performance.md); tests/unit/test_cli_parser.py
    holds the parses and the help to those of the whole tree.
    """
    if words is not None and asks_help(words, skip) and all(len(entry) > 2 for entry in table):
        for name, _, summary in table:
            sub.add_parser(name, help=summary, add_help=False)
        return
    called, rest = called_verb(words, table, whole, skip) if words is not None else (None, None)
    bare: Any = None  # one parser with no argument answers to every bare name
    for name, module, *_ in table:
        if called is None:
            verb_module(module).register(sub)
        elif name == called:
            verb_module(module).register(sub, rest)
        elif bare is None:
            bare = sub.add_parser(name, add_help=False)
        else:
            sub.choices[name] = bare  # the action's name -> parser map, in the table's order


def asks_help(words: list[str], skip: Collection[str] = ()) -> bool:
    """Whether the first word not in `skip` is one argparse reads as the root's `--help`."""
    return next((word for word in words if word not in skip), None) in HELP_WORDS


def called_verb(words: list[str], table: Sequence[tuple[str, ...]], whole: Collection[str] = (),
                skip: Collection[str] = ()) -> tuple[str | None, list[str] | None]:
    """The verb of the table the words name and the words after it, when no other verb is needed;
    ("", []) when they name none; (None, None) when the parse may need every verb."""
    for index, word in enumerate(words):
        if word in skip:
            continue
        if word.startswith("-") or word in whole or all(word != entry[0] for entry in table):
            return None, None
        return word, words[index + 1:]
    return "", []  # no verb named, no option that shows help: the parse sees none in full
