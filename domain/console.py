"""A console tail as a person reads it: whole lines only. Pure functions over text.

A line is what ends in `\n` (a `\r` or a Unicode separator the work wrote is part of its line).
"""

from __future__ import annotations


def from_line_start(text: str) -> str:
    """A tail cut somewhere inside a line, from the next line's start; a tail that holds no line
    break is one cut line, shown as it is rather than as nothing."""
    cut = text.find("\n")
    return text[cut + 1:] if 0 <= cut < len(text) - 1 else text


def last_lines(text: str, count: int, cut_at_start: bool) -> tuple[str, bool]:
    """The last `count` lines of `text` (a last line without its `\n` counts as one) and whether
    anything was left out. `cut_at_start`: the text is itself a tail, whose first line is partial."""
    if cut_at_start:
        whole = from_line_start(text)
        text, cut_at_start = whole, cut_at_start or whole != text
    if count <= 0:
        return "", bool(text) or cut_at_start
    body = text[:-1] if text.endswith("\n") else text
    breaks = [index for index, char in enumerate(body) if char == "\n"]
    if len(breaks) < count:
        return text, cut_at_start
    return text[breaks[-count] + 1:], True
