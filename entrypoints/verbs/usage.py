"""`li usage [--since 7d] [--by model|label|queue]`: the tokens, cost and wall time ended runs
recorded; what a run did not report is shown as unreported, never as 0."""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from lionrun.entrypoints.verb_table import summary
from lionrun.entrypoints.verbs._common import this


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("usage", help=summary("usage"))
    parser.add_argument("--since", help="only runs submitted since: a duration back (30m, 2h, 7d) or an ISO time")
    parser.add_argument("--by", metavar="model|label|queue", help="one total per model, label or queue")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    from lionrun.application.usage import UsageService
    from lionrun.domain.contract import ContractError, ErrorKind
    from lionrun.domain.usage import BY
    from lionrun.domain.wire import UsageData, UsageTotal
    from lionrun.entrypoints.container import get_container

    by = args.by
    if by is not None and by not in BY:
        raise ContractError(ErrorKind.INVALID_INPUT, f"--by must be one of {', '.join(BY)}, not {str(by)[:80]!r}",
                            {"argument": "--by", "value": str(by)[:200]})
    since = None
    if args.since is not None:
        from lionrun.domain.run import parse_since

        since = parse_since(args.since, get_container().core.clock().now())
    store = get_container().core.store()
    data = UsageService(store, store).usage(since, by)
    return UsageData(since=data["since"], by=data["by"], groups=[UsageTotal(**g) for g in data["groups"]],
                     total=UsageTotal(**data["total"]), not_ended=data["not_ended"],
                     unreadable=data["unreadable"]).to_wire()


def cost_text(value: float | None, unreported: int) -> str:
    """`$1.23`, `$1.23 (+2 unreported)`, or `unreported`: never a 0 for what nobody reported."""
    if value is None:
        return "unreported"
    return f"${value:.2f}" + (f" (+{unreported} unreported)" if unreported else "")


def tokens_text(tokens: dict[str, Any] | None, unreported: int) -> str:
    if tokens is None:
        return "unreported"
    shown = f"{int(tokens.get('input_tokens', 0))} in / {int(tokens.get('output_tokens', 0))} out"
    return shown + (f" (+{unreported} unreported)" if unreported else "")


def human(args: Namespace) -> int:
    data = run(args)
    rows = [*data["groups"], data["total"]]
    sys.stdout.write(f"{(data['by'] or '').upper() or 'RUNS':<24} {'RUNS':>5} {'WALL':>9}  {'COST':<26} TOKENS\n")
    for row in rows:
        wall = "unreported" if row["wall_seconds"] is None else f"{row['wall_seconds']:.0f}s"
        sys.stdout.write(f"{row['key']:<24} {row['runs']:>5} {wall:>9}  "
                         f"{cost_text(row['cost_usd'], row['cost_unreported']):<26} "
                         f"{tokens_text(row['tokens'], row['tokens_unreported'])}\n")
    if data["not_ended"] or data["unreadable"]:
        sys.stdout.write(f"(not counted: {data['not_ended']} not ended, {data['unreadable']} unreadable)\n")
    return 0
