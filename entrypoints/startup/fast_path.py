"""Requests answered without argparse (a start-up measure, README.md here).

Requests whose exact words name a verb that takes no argument get the namespace the parser would
give them (tests/unit/test_dispatch.py holds the two equal) without a parser: `li handshake` may
be called on every poll, and argparse with its gettext and locale look-ups is about a third of
it. So do the polls of one run: `job status RUN_ID`, `job wait RUN_ID [--max-wait N]`
and a bare `job list`, when each word is a plain word (nothing starting with `-` where the
parser would read an option). Anything else (`li handshake --help`, a typo, any other option)
goes through the parser.
"""

from __future__ import annotations

from types import SimpleNamespace

from lionrun.entrypoints.startup.lazy_verbs import verb_module

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: a handshake never loads it
if TYPE_CHECKING:
    from argparse import Namespace

WITHOUT_PARSER: dict[tuple[str, ...], str] = {("handshake",): "lionrun.entrypoints.verbs.handshake"}
# `li job list` with no option: the defaults its parser gives (entrypoints/verbs/job_list.py).
LIST_DEFAULTS: dict[str, object] = {"limit": None, "status": None, "label": None, "model": None, "parent": None,
                                    "since": None, "sort": None, "wide": False, "watch": False}


def without_parser(args: list[str]) -> Namespace | None:
    """The namespace the parser would give these words, when they are answered without one; else None."""
    module = WITHOUT_PARSER.get(tuple(args))
    if module is None:
        return a_poll(args)
    return SimpleNamespace(version=False, command=args[0], verb=verb_module(module))  # type: ignore[return-value]


def a_poll(args: list[str]) -> Namespace | None:
    """`job status RUN_ID`, `job wait RUN_ID [--max-wait N]`, `job list`: their namespace; else None."""
    if len(args) < 2 or args[0] != "job" or any(word.startswith("-") for word in args[2:3] + args[4:]):
        return None
    fields: dict[str, object]
    if args[1] == "status" and len(args) == 3:
        fields = {"run_id": args[2]}
    elif args[1] == "wait" and (len(args) == 3 or (len(args) == 5 and args[3] == "--max-wait")):
        fields = {"run_ids": [args[2]], "max_wait": args[4] if len(args) == 5 else None, "poll_interval": None,
                  "label": None, "status": None}
    elif args[1] == "list" and len(args) == 2:
        fields = dict(LIST_DEFAULTS)
    else:
        return None
    verb = verb_module(f"lionrun.entrypoints.verbs.job_{args[1]}")
    return SimpleNamespace(version=False, command="job", job_command=args[1],  # type: ignore[return-value]
                           verb=verb, **fields)
