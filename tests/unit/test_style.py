"""The colour helper: colour only on a terminal, never when NO_COLOR is set to something."""

from __future__ import annotations

import io

import pytest

from lionrun.entrypoints.style import outcome_colour, paint, plain, use_colour


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class ClosedStream(io.StringIO):
    def isatty(self) -> bool:
        raise ValueError("I/O operation on closed file")


def test_a_terminal_gets_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_colour(Terminal())
    assert paint("ok", "green", Terminal()) == "\x1b[32mok\x1b[0m"


def test_a_pipe_never_gets_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert not use_colour(io.StringIO())
    assert paint("ok", "green", io.StringIO()) == "ok"


@pytest.mark.parametrize("value", ["1", "0", "yes", "false"])
def test_any_non_empty_no_color_turns_colour_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("NO_COLOR", value)
    assert not use_colour(Terminal()) and paint("ok", "red", Terminal()) == "ok"


def test_an_empty_no_color_leaves_colour_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "")
    assert use_colour(Terminal())


def test_a_closed_or_odd_stream_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert not use_colour(ClosedStream()) and not use_colour(object())


def test_unknown_or_no_colour_leaves_text_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert paint("x", None, Terminal()) == "x" and paint("x", "chartreuse", Terminal()) == "x"


def test_outcomes_have_colours_and_plain_strips_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert outcome_colour("succeeded") == "green" and outcome_colour("failed") == "red"
    assert outcome_colour(None) == "cyan" and outcome_colour("something-new") == "magenta"
    assert plain(paint("done", "green", Terminal())) == "done"
