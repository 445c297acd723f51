"""The parser built for one request (only the verb it names in full) parses it as the whole tree does."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from lionrun.entrypoints.cli import HelpRequested, UsageError, build_parser

RUN_ID = "20260101T000000-000000"


def command_paths(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [path]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                paths.extend(command_paths(child, (*path, name)))
    return paths


PATHS = command_paths(build_parser())
SUFFIXES: list[tuple[str, ...]] = [(), ("--help",), ("-h",), ("--bogus",), ("extra", "words"), (RUN_ID,),
                                   (RUN_ID, "--max-wait", "0"), ("--limit", "3"), ("sh", "true"), ("--detach", "sh", "true")]
MORE: list[tuple[str, ...]] = [
    (), ("--version",), ("--version", "job", "list"), ("-h", "job"), ("--he",), ("--", "job", "list"), ("jo",),
    ("nosuch",), ("nosuch", "--help"), ("job", "nosuch"), ("JOB", "list"), ("job", "--help", "list"),
    ("handshake", "--version"), ("job", "wait", RUN_ID, RUN_ID, "--max-wait", "nope"), ("agent", "--", "-x"),
    ("completion", "bash"), ("completion", "--words", "runs"), ("store", "copy", "/x"), ("--versio", "handshake"),
]
ARGVS = sorted({(*path, *suffix) for path in PATHS for suffix in SUFFIXES} | set(MORE))


def outcome(parser: argparse.ArgumentParser, argv: tuple[str, ...]) -> tuple[Any, ...]:
    try:
        namespace = parser.parse_args(list(argv))
    except HelpRequested as request:
        return ("help", request.text)
    except UsageError as error:
        return ("usage", error.message, error.usage)
    values = vars(namespace).copy()
    assert values.pop("tree") is not None
    verb = values.pop("verb", None)
    return ("ok", getattr(verb, "__name__", None), sorted(values.items(), key=lambda item: item[0]))


def test_the_corpus_reaches_every_command_and_every_kind_of_answer() -> None:
    assert len(PATHS) > 15
    kinds = {outcome(build_parser(), argv)[0] for argv in ARGVS}
    assert kinds == {"ok", "help", "usage"}


@pytest.mark.parametrize("argv", ARGVS, ids=[" ".join(a) or "(none)" for a in ARGVS])
def test_the_parser_built_for_a_request_answers_it_as_the_whole_tree(argv: tuple[str, ...]) -> None:
    assert outcome(build_parser(list(argv)), argv) == outcome(build_parser(), argv)


def registered(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommands registered in full (a bare name has no action, not even -h)."""
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: child for name, child in commands.choices.items() if child._actions}


def test_a_read_registers_only_its_verb_and_its_subcommand() -> None:
    root = build_parser(["job", "status", RUN_ID])
    assert set(registered(root)) == {"job"}
    assert set(registered(registered(root)["job"])) == {"status"}
    assert set(registered(build_parser(["handshake"]))) == {"handshake"}
    from lionrun.entrypoints.verbs.job import SUB_TABLE

    assert len(registered(registered(build_parser(["job", "--help", "status"]))["job"])) == len(SUB_TABLE)
    assert registered(build_parser([])) == registered(build_parser(["--version"])) == {}
    for whole in (["--bogus", "job"], ["completion", "bash"], ["nosuch"], ["--", "job"]):
        levels = registered(build_parser(whole))
        assert len(levels) == len(registered(build_parser())), whole
        assert len(registered(levels["job"])) == len(SUB_TABLE), whole


def test_the_root_help_registers_no_verb_in_full_and_lists_every_verb_with_its_summary() -> None:
    # Issue 44: `li --help` is answered from the verb table's summaries (argparse prints the help
    # at that word and parses no further); the answer is the whole tree's (test above, ARGVS).
    from lionrun.entrypoints.verb_table import VERB_TABLE

    for words in (["--help"], ["-h"], ["--he", "job"], ["--version", "--help"], ["--help", "nosuch"]):
        root = build_parser(words)
        assert registered(root) == {}, words
        assert outcome(root, tuple(words)) == outcome(build_parser(), tuple(words)), words
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert [(c.dest, c.help) for c in commands._choices_actions] == [(n, s) for n, _, s in VERB_TABLE]


def test_completion_walks_the_whole_tree() -> None:
    namespace = build_parser(["completion", "bash"]).parse_args(["completion", "bash"])
    assert command_paths(namespace.tree) == PATHS


def every_parser(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found.extend(every_parser(child))
    return found


@pytest.mark.parametrize("columns", ["30", "80", "133", None])
def test_every_help_and_usage_is_the_stock_formatters(columns: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    parsers = every_parser(build_parser())
    assert len(parsers) == len(PATHS)
    for parser in parsers:
        ours = (parser.format_help(), parser.format_usage())
        parser.formatter_class = argparse.HelpFormatter
        assert (parser.format_help(), parser.format_usage()) == ours, parser.prog


@pytest.mark.parametrize("columns", ["30", "133", "0", "-5", "wide", None])
def test_the_help_width_is_shutils_without_importing_shutil(columns: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from lionrun.entrypoints.startup.lazy_formatter import terminal_columns

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == shutil.get_terminal_size().columns
