"""argparse's help formatter, measuring the terminal only once it formats something (a start-up
measure, README.md here)."""

from __future__ import annotations

import argparse


class Formatter(argparse.HelpFormatter):
    """argparse's help formatter, measuring the terminal only once it formats something.

    argparse makes a formatter for every `add_argument` (to check the metavar) and the stock one
    measures the terminal each time, importing shutil (bz2, lzma, fnmatch) on every
    call. The width and the help position are the stock formulas, computed on first
    use (tests/unit/test_cli_parser.py holds every help text and usage to the stock formatter's),
    the width by `terminal_columns`, shutil's own rule without shutil's imports (`li --help`).
    """

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        self._wanted_position = max_help_position
        self._measure = width is None
        super().__init__(prog, indent_increment, max_help_position, 0 if width is None else width)
        self._measure = width is None  # the stock __init__ has set both through the properties

    def _measured(self) -> None:
        if self._measure:
            self._measure = False
            width = terminal_columns() - 2
            self._stored_width = width
            self._stored_position = min(self._wanted_position, max(width - 20, self._indent_increment * 2))

    @property
    def _width(self) -> int:
        self._measured()
        return self._stored_width

    @_width.setter
    def _width(self, value: int) -> None:
        self._stored_width = value

    @property
    def _max_help_position(self) -> int:
        self._measured()
        return self._stored_position

    @_max_help_position.setter
    def _max_help_position(self, value: int) -> None:
        self._stored_position = value


def terminal_columns() -> int:
    """The columns `shutil.get_terminal_size()` gives (COLUMNS when a positive number, else the
    terminal of the interpreter's stdout, else 80), without importing shutil; tests/unit/
    test_cli_parser.py holds the two equal."""
    import os
    import sys

    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        columns = 0
    return columns or 80
