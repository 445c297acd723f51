"""Colour for people: only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""

from __future__ import annotations

import os
import re
from typing import IO, Any

CODES = {
    "red": "31", "green": "32", "yellow": "33", "blue": "34",
    "magenta": "35", "cyan": "36", "bold": "1", "dim": "2",
}
OUTCOME_COLOURS = {
    "succeeded": "green", "failed": "red", "cancelled": "yellow", "indeterminate": "magenta",
}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def use_colour(stream: IO[Any] | Any) -> bool:
    """True only when `stream` is a terminal and NO_COLOR is unset or empty."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except (OSError, ValueError):  # a closed or detached stream is not a terminal
        return False


def paint(text: str, colour: str | None, stream: IO[Any] | Any) -> str:
    """`text` wrapped in the colour's escape codes when `stream` may have colour; else `text`."""
    if colour is None or colour not in CODES or not use_colour(stream):
        return text
    return f"\x1b[{CODES[colour]}m{text}\x1b[0m"


def outcome_colour(outcome: str | None) -> str | None:
    """The colour of an outcome; a run that has not ended (outcome null) is cyan."""
    return OUTCOME_COLOURS.get(outcome, "magenta") if outcome is not None else "cyan"


def plain(text: str) -> str:
    """`text` without colour codes, for measuring widths."""
    return _ANSI.sub("", text)
