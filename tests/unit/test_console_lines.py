"""Whole lines of a console tail: domain/console.py."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lionrun.domain.console import from_line_start, last_lines


def test_a_cut_tail_starts_at_the_next_line() -> None:
    assert from_line_start("ine-3003\nline-3004\n") == "line-3004\n"


def test_a_tail_without_a_line_break_is_shown_as_it_is() -> None:
    assert from_line_start("no break at all") == "no break at all"
    assert from_line_start("only one\n") == "only one\n"


def test_the_last_n_lines() -> None:
    text = "a\nb\nc\n"
    assert last_lines(text, 2, False) == ("b\nc\n", True)
    assert last_lines(text, 3, False) == (text, False)
    assert last_lines(text, 9, False) == (text, False)
    assert last_lines("a\nb\nno newline", 1, False) == ("no newline", True)
    assert last_lines(text, 0, False) == ("", True)


def test_a_tails_partial_first_line_is_never_one_of_the_last_lines() -> None:
    assert last_lines("rt\nb\nc\n", 5, True) == ("b\nc\n", True)


def test_a_carriage_return_is_part_of_its_line() -> None:
    assert last_lines("a\rb\nc\n", 2, False) == ("a\rb\nc\n", False)


@given(st.lists(st.text(alphabet="xy\r ", max_size=5), max_size=12), st.integers(0, 14))
def test_last_lines_are_whole_lines_at_the_end(lines: list[str], count: int) -> None:
    text = "".join(line + "\n" for line in lines)
    shown, cut = last_lines(text, count, False)
    assert text.endswith(shown)
    assert shown.count("\n") == min(count, len(lines))
    assert cut == (min(count, len(lines)) < len(lines))
