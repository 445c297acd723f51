"""“Did you mean”: the known words closest to a mistyped one. Used on the error path only (difflib
is imported there, never by a request that succeeds)."""

from __future__ import annotations

from collections.abc import Iterable

CUTOFF = 0.6  # difflib's default ratio: `lsit`→`list`, `jbo`→`job`, `--lmit`→`--limit`, `cluade`→`claude`


def closest(word: str, known: Iterable[str], count: int = 2) -> list[str]:
    """Up to `count` known words close to `word`, closest first; none when nothing is close."""
    import difflib

    choices = [k for k in dict.fromkeys(known) if k != word]
    return difflib.get_close_matches(word, choices, n=count, cutoff=CUTOFF)


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """`; did you mean 'list'?` (or `'a' or 'b'`), or "" when nothing known is close."""
    found = closest(word, known)
    if not found:
        return ""
    return "; did you mean " + " or ".join(repr(f) for f in found) + "?"
