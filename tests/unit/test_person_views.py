"""Issue 27 item 3, the pieces behind a person's views: a line folded to the width between words
(one helper, for status and doctor alike)."""

from __future__ import annotations

import pytest

from entrypoints.table import fold

WORDS = "store.private   under /tmp/li-home: 1 entry open to group or others (e.g. console.log (0644))"


@pytest.mark.parametrize("width", [30, 44, 60, 80])
def test_a_line_folds_between_words_under_its_indent(width: int) -> None:
    lines = fold(WORDS, width, 16)
    assert all(len(line) <= width for line in lines), lines
    assert " ".join(lines).split() == WORDS.split()  # no word cut in two
    indent = 16 if width - 16 >= 20 else 4  # a line keeps at least 20 cells for its words
    assert all(line.startswith(" " * indent) and line[indent] != " " for line in lines[1:]), lines


def test_a_line_that_fits_or_goes_to_a_pipe_is_left_whole() -> None:
    assert fold(WORDS, None, 16) == [WORDS]
    assert fold(WORDS, len(WORDS), 16) == [WORDS]


def test_an_indent_that_would_leave_no_room_for_words_is_narrowed() -> None:
    lines = fold(WORDS, 30, 27)
    assert all(len(line) <= 30 for line in lines) and " ".join(lines).split() == WORDS.split(), lines

