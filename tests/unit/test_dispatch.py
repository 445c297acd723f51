"""The dispatcher in-process: one envelope for every request, exit codes, and where 78 may come from."""

from __future__ import annotations

import io
import json
from argparse import Namespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.entrypoints import dispatch as dispatcher
from lionrun.entrypoints.bootstrap import split_machine
from lionrun.entrypoints.environment import EnvironmentFault
from lionrun.entrypoints.startup import fast_path
from lionrun.entrypoints.verbs import handshake


class Out(io.StringIO):
    """A text stream with a `.buffer`, like the envelope descriptor the bootstrap hands over."""

    def __init__(self) -> None:
        super().__init__()
        self.buffer = io.BytesIO()

    def envelope(self) -> dict[str, Any]:
        text = self.buffer.getvalue().decode("utf-8")
        assert text.endswith("\n") and text.count("\n") == 1, text
        return json.loads(text)


def machine(*args: str) -> dict[str, Any]:
    out = Out()
    assert dispatcher.dispatch(list(args), machine=True, out=out) == 0
    return out.envelope()


def fake_handshake(monkeypatch: pytest.MonkeyPatch, behaviour: Any) -> None:
    monkeypatch.setattr(handshake, "run", behaviour)
    monkeypatch.setattr(handshake, "show", lambda data, args: 0)


@given(st.lists(st.sampled_from(["a", "--machine", "--", "-x", "b"]), max_size=8))
def test_machine_is_taken_from_before_the_first_double_dash_only(argv: list[str]) -> None:
    machine_mode, rest = split_machine(argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    assert machine_mode == ("--machine" in argv[:cut])
    assert rest == [a for a in argv[:cut] if a != "--machine"] + argv[cut:]


def test_a_refusal_is_an_ok_false_envelope_with_its_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(args: Namespace) -> dict[str, Any]:
        raise ContractError(ErrorKind.CONFLICT, "already running", {"run_id": "x"})

    fake_handshake(monkeypatch, refuse)
    envelope = machine("handshake")
    assert envelope["error"] == {"kind": "conflict", "message": "already running", "detail": {"run_id": "x"}}


@pytest.mark.parametrize("failure", [RuntimeError("bug"), SystemExit(3), KeyError("k"), RecursionError()])
def test_an_unexpected_exception_is_an_internal_envelope(monkeypatch: pytest.MonkeyPatch, failure: BaseException) -> None:
    def explode(args: Namespace) -> dict[str, Any]:
        raise failure

    fake_handshake(monkeypatch, explode)
    envelope = machine("handshake")
    assert envelope["ok"] is False and envelope["error"]["kind"] == "internal"


@pytest.mark.parametrize("answer", [None, [1, 2], "text", {"x": float("nan")}, {"x": object()}])
def test_an_answer_that_is_not_a_json_object_becomes_an_internal_envelope(
    monkeypatch: pytest.MonkeyPatch, answer: Any
) -> None:
    fake_handshake(monkeypatch, lambda args: answer)
    envelope = machine("handshake")
    assert envelope["ok"] is False and envelope["error"]["kind"] == "internal"


def test_lone_surrogates_from_undecodable_argv_never_reach_the_wire() -> None:
    envelope = machine("\udcff\udcfe")
    assert envelope["error"]["kind"] == "invalid_input"


def test_an_import_failure_in_a_read_is_an_environment_fault(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(args: Namespace) -> dict[str, Any]:
        raise ModuleNotFoundError("No module named 'psutil'")

    fake_handshake(monkeypatch, missing)
    with pytest.raises(EnvironmentFault):
        dispatcher.dispatch(["handshake"], machine=True, out=Out())
    with pytest.raises(EnvironmentFault):
        dispatcher.dispatch(["handshake"], machine=False, out=Out())


def test_an_import_failure_once_a_submit_has_begun_is_internal_not_78(monkeypatch: pytest.MonkeyPatch) -> None:
    from lionrun.entrypoints.verbs import agent

    def late(args: Namespace) -> dict[str, Any]:
        raise ModuleNotFoundError("No module named 'late'")

    monkeypatch.setattr(agent, "run", late)
    monkeypatch.setattr(agent, "human", lambda args: late(args))
    assert machine("agent", "sh", "true", "--detach")["error"]["kind"] == "internal"
    assert dispatcher.dispatch(["agent", "sh", "true"], machine=False, out=Out()) == 70


def test_a_submit_whose_dependencies_do_not_import_is_an_environment_fault_before_it_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lionrun.entrypoints.verbs import agent

    calls: list[str] = []

    def guard(names: tuple[str, ...]) -> None:
        assert "psutil" in names
        raise EnvironmentFault("psutil: ImportError")

    monkeypatch.setattr(dispatcher, "import_required", guard)
    monkeypatch.setattr(agent, "run", lambda args: calls.append("ran") or {})
    with pytest.raises(EnvironmentFault):
        dispatcher.dispatch(["agent", "sh", "true"], machine=True, out=Out())
    assert calls == []


@pytest.mark.parametrize("kind, code", [("invalid_input", 2), ("not_found", 3), ("conflict", 4),
                                        ("unavailable", 5), ("internal", 70)])
def test_human_mode_refusals_are_one_stderr_line_and_a_non_zero_exit(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kind: str, code: int
) -> None:
    def refuse(args: Namespace) -> dict[str, Any]:
        raise ContractError(ErrorKind(kind), "no\nsuch thing")

    fake_handshake(monkeypatch, refuse)
    out = Out()
    assert dispatcher.dispatch(["handshake"], machine=False, out=out) == code
    assert out.getvalue() == ""
    assert len(capsys.readouterr().err.splitlines()) == 1


def test_human_mode_usage_errors_are_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    out = Out()
    assert dispatcher.dispatch(["no-such-command"], machine=False, out=out) == 2
    assert out.getvalue() == "" and len(capsys.readouterr().err.splitlines()) == 1


def test_help_and_version_answer_in_both_modes() -> None:
    assert "usage: li" in machine("--help")["data"]["help"]
    assert machine("--version")["data"]["version"]
    out = Out()
    assert dispatcher.dispatch(["--help"], machine=False, out=out) == 0 and "usage: li" in out.getvalue()


def test_no_command_is_invalid_input_with_the_usage() -> None:
    error = machine()["error"]
    assert error["kind"] == "invalid_input" and "usage" in error["detail"]["usage"]


@pytest.mark.parametrize("breaker", ["\x85", "\u2028", "\u2029", "\r", "\n"])
def test_an_envelope_is_one_line_even_for_characters_line_readers_split_on(
    monkeypatch: pytest.MonkeyPatch, breaker: str
) -> None:
    fake_handshake(monkeypatch, lambda args: {"text": f"a{breaker}b"})
    out = Out()
    dispatcher.dispatch(["handshake"], machine=True, out=out)
    text = out.buffer.getvalue().decode("utf-8")
    assert len(text.splitlines()) == 1
    assert json.loads(text)["data"]["text"] == f"a{breaker}b"


POLLS = [("job", "status", "20261205T233531-f32ef1"), ("job", "status", "c3406e"), ("job", "list"),
         ("job", "wait", "20261205T233531-f32ef1"), ("job", "wait", "c3406e", "--max-wait", "0"),
         ("job", "wait", "x", "--max-wait", "1.5")]


@pytest.mark.parametrize("words", [*sorted(fast_path.WITHOUT_PARSER), *POLLS], ids=" ".join)
def test_words_answered_without_a_parser_get_the_namespace_the_parser_gives(words: tuple[str, ...]) -> None:
    assert fast_path.without_parser(list(words)) is not None, "the words go through the parser; this proves nothing"
    from lionrun.entrypoints.cli import build_parser

    fast = vars(dispatcher.parse(list(words)))
    for built in (build_parser(list(words)), build_parser()):  # the request's parser and the whole tree
        parsed = vars(built.parse_args(list(words)))
        parsed.pop("tree")  # the parser itself, for `li completion` alone
        assert fast == parsed


@pytest.mark.parametrize("words", [
    ("job", "status", "-h"), ("job", "status", "--help"), ("job", "status"), ("job", "status", "a", "b"),
    ("job", "list", "--wide"), ("job", "list", "--limit", "3"), ("job", "wait", "-"), ("job", "wait", "a", "b"),
    ("job", "wait", "a", "--max-wait", "-1"), ("job", "wait", "a", "--max-wait=0"), ("job", "wait", "a", "--poll-interval", "1"),
    ("job", "wait", "a", "--max-wait"), ("job", "output", "a"), ("job", "kill", "a"), ("agent", "status", "a"),
], ids=" ".join)
def test_any_other_words_of_a_poll_go_through_the_parser(words: tuple[str, ...]) -> None:
    assert fast_path.without_parser(list(words)) is None


def test_a_handshake_without_a_parser_answers_what_the_parser_path_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = machine("handshake")
    monkeypatch.setattr(fast_path, "WITHOUT_PARSER", {})
    assert fast["ok"] is True and fast == machine("handshake")
