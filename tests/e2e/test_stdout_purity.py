"""Under --machine, stdout is exactly one JSON envelope for every row of the verb table (D1, D3, D8)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator

import pytest

from tests.e2e.verb_table import ROWS, Row
from tests.support import run_li

ERROR_KINDS = {"not_found", "invalid_input", "conflict", "unavailable", "internal"}


def command_paths(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command path the parser knows: ("handshake",), ("job", "status"), ..."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*prefix, name)
                yield from command_paths(sub, (*prefix, name))


def single_object(stdout: str) -> dict[str, object]:
    text = stdout.strip()
    value, end = json.JSONDecoder().raw_decode(text)
    assert end == len(text), f"something besides one JSON object on stdout: {stdout!r}"
    assert isinstance(value, dict)
    return value


@pytest.mark.parametrize("request_row", ROWS, ids=[r.name for r in ROWS])
def test_every_machine_answer_is_exactly_one_envelope_with_exit_zero(request_row: Row, li_home: str) -> None:
    result = run_li(*request_row.argv, "--machine", home=li_home, timeout=120)
    assert result.returncode == 0, (result.returncode, result.stderr)
    envelope = single_object(result.stdout)
    assert envelope["contract_version"] == 1
    assert (envelope["data"] is None) != (envelope["error"] is None), envelope
    assert envelope["ok"] is (envelope["error"] is None)
    if envelope["error"] is not None:
        error = envelope["error"]
        assert isinstance(error, dict) and error["kind"] in ERROR_KINDS, error
        assert isinstance(error["message"], str) and error["message"]
    assert "Traceback" not in result.stderr, result.stderr


def test_every_command_the_parser_knows_has_a_row_in_the_verb_table() -> None:
    from lionrun.entrypoints.cli import build_parser

    covered = {r.argv[: len(r.argv)] for r in ROWS}
    missing = [
        " ".join(path) for path in command_paths(build_parser())
        if not any(argv[: len(path)] == path for argv in covered)
    ]
    assert missing == [], f"add rows to tests/e2e/verb_table.py for: {missing}"


def test_the_table_holds_a_help_row_for_every_command_level() -> None:
    from lionrun.entrypoints.cli import build_parser

    helps = {r.argv[:-1] for r in ROWS if r.argv and r.argv[-1] == "--help"}
    paths = {(), *command_paths(build_parser())}
    assert paths - helps == set(), sorted(paths - helps)
