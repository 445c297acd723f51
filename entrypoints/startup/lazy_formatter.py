"""argparse's help formatter, measuring the terminal only once it formats something (a start-up
measure, README.md here)."""

from __future__ import annotations

import argparse


class Formatter(argparse.HelpFormatter):
    """argparse's help formatter, measuring the terminal only once it formats something.

    argparse makes a formatter for every `add_argument` (to check the metavar) and the stock one
    measures the terminal each time, importing shutil (bz2, lzma, fnmatch) on every
    call. The width and the help position are the stock formulas, computed on first
    use (tests/unit/test_cli_parser.py holds every help text and usage to the stock formatter's).
    """

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        self._wanted_position = max_help_position
        self._measure = width is None
        super().__init__(prog, indent_increment, max_help_position, 0 if width is None else width)
        self._measure = width is None  # the stock __init__ has set both through the properties

    def _measured(self) -> None:
        if self._measure:
            import shutil

            self._measure = False
            width = shutil.get_terminal_size().columns - 2
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
