"""Requests answered without argparse (a start-up measure, README.md here).

Requests whose exact words name a verb that takes no argument get the namespace the parser would
give them (tests/unit/test_dispatch.py holds the two equal) without a parser: `li handshake` may
be called on every poll, and argparse with its gettext and locale look-ups is about a third of
it. Anything else (`li handshake --help`, a typo) goes through the parser.
"""

from __future__ import annotations

from types import SimpleNamespace

from lionrun.entrypoints.startup.lazy_verbs import verb_module

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: a handshake never loads it
if TYPE_CHECKING:
    from argparse import Namespace

WITHOUT_PARSER: dict[tuple[str, ...], str] = {("handshake",): "lionrun.entrypoints.verbs.handshake"}


def without_parser(args: list[str]) -> Namespace | None:
    """The namespace the parser would give these words, when they are answered without one; else None."""
    module = WITHOUT_PARSER.get(tuple(args))
    if module is None:
        return None
    return SimpleNamespace(version=False, command=args[0], verb=verb_module(module))  # type: ignore[return-value]
