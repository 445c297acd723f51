"""Fitting a table of text into a terminal's width: elastic columns end in an ellipsis, the least
useful columns go first when even that is too wide. Standard library only."""

from __future__ import annotations

import os
import sys
import unicodedata
from dataclasses import dataclass
from typing import IO, Any

ELLIPSIS = "…"
GAP = "  "


@dataclass(frozen=True)
class Column:
    """A column: its heading, the narrowest it may become (0: never cut), and how early it is dropped
    when the table cannot fit (higher goes first; 0: never dropped)."""

    name: str
    minimum: int = 0
    drop: int = 0


def width_of(text: str) -> int:
    """Terminal cells `text` takes: wide East Asian characters count two, combining marks none."""
    return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
               for ch in text)


def cut(text: str, width: int) -> str:
    """`text` in at most `width` cells, ending in an ellipsis when it was cut."""
    if width_of(text) <= width:
        return text
    if width <= 0:
        return ""
    out, used = [], 0
    for ch in text:
        cells = width_of(ch)
        if used + cells > width - 1:
            break
        out.append(ch)
        used += cells
    return "".join(out) + ELLIPSIS


def pad(text: str, width: int) -> str:
    return text + " " * max(0, width - width_of(text))


def terminal_width(stream: IO[Any] | Any) -> int | None:
    """The width to fit: the terminal's when `stream` is one, else None (a pipe or a file gets it all)."""
    try:
        if stream.isatty():
            return os.get_terminal_size(stream.fileno()).columns or None
    except (OSError, ValueError, AttributeError):
        pass
    return None


def fit(columns: list[Column], rows: list[list[str]], width: int | None) -> tuple[list[int], list[int]]:
    """(the indexes of the columns kept, their widths) so that a line is at most `width` cells."""
    keep = list(range(len(columns)))
    natural = [max([width_of(columns[i].name), *(width_of(r[i]) for r in rows)]) for i in keep]
    if width is None:
        return keep, natural
    while True:
        widths = [natural[i] for i in keep]
        total = sum(widths) + len(GAP) * (len(keep) - 1)
        excess = total - width
        floors = [max(columns[i].minimum, width_of(columns[i].name)) if columns[i].minimum else widths[p]
                  for p, i in enumerate(keep)]
        while excess > 0:  # the widest elastic column gives a cell at a time, so cuts are shared
            slack = [widths[p] - floors[p] for p in range(len(keep))]
            widest = max(range(len(keep)), key=lambda p: (slack[p], p))
            if slack[widest] <= 0:
                break
            widths[widest] -= 1
            excess -= 1
        if excess <= 0:
            return keep, widths
        droppable = [i for i in keep if columns[i].drop]
        if not droppable:
            return keep, widths
        keep.remove(max(droppable, key=lambda i: columns[i].drop))


def lines(columns: list[Column], rows: list[list[str]], keep: list[int], widths: list[int]) -> list[list[str]]:
    """The heading and each row as fitted, padded cells (kept columns only); join them with GAP."""
    return [[pad(cut(cells[i], w), w) for i, w in zip(keep, widths, strict=True)]
            for cells in [[c.name for c in columns], *rows]]


def stdout_width() -> int | None:
    return terminal_width(sys.stdout)


FOLD_TEXT_MIN = 20  # cells a folded line keeps for its words; a deeper indent is narrowed to leave them


def fold(line: str, width: int | None, indent: int = 4) -> list[str]:
    """One line of words in lines of at most `width` cells, broken at spaces (a word is split only
    when it is wider than a whole line), each line after the first indented by `indent` cells so
    the text reads on under itself. `width` None (a pipe or a file): the line whole."""
    if width is None or width_of(line) <= width:
        return [line]
    import textwrap

    if width - indent < FOLD_TEXT_MIN:
        indent = max(0, min(4, width - FOLD_TEXT_MIN))
    return textwrap.wrap(line, width=max(1, width), subsequent_indent=" " * indent,
                         break_on_hyphens=False) or [line]
