"""`li queue set|pause|resume|list`: queues with parallel limits, kept by the store."""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.entrypoints.verb_table import summary
from lionrun.entrypoints.verbs._common import this

SUBCOMMANDS = ("set", "pause", "resume", "list")


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("queue", help=summary("queue"))
    verbs = parser.add_subparsers(dest="queue_command", metavar="SUBCOMMAND")
    change = verbs.add_parser("set", help="set a queue's limit: at most N of its runs' works at once")
    change.add_argument("name", metavar="NAME", help="the queue (created when new)")
    change.add_argument("--parallel", metavar="N", help="at most N works at once (1-10000); `none` for no limit")
    change.add_argument("--max-tokens", metavar="N",
                        help="a token budget per window: once the queue's runs reported N tokens in the "
                             "window, the queue pauses until it rolls; `none` for no budget")
    change.add_argument("--per", metavar="WINDOW", help="the budget's window: 24h, 30m, 90s, 7d")
    change.set_defaults(queue_command="set")
    for name, what in (("pause", "start none of a queue's waiting runs until it is resumed"),
                       ("resume", "let a paused queue start its waiting runs again (a rate-limit pause too)")):
        one = verbs.add_parser(name, help=what)
        one.add_argument("name", metavar="NAME", help="the queue")
        one.set_defaults(queue_command=name)
    listing = verbs.add_parser("list", help="every queue: its limit, running, waiting, paused and why")
    listing.set_defaults(queue_command="list")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    from lionrun.application.ports import StoreRefused
    from lionrun.domain.wire import QueueData, QueueRow, QueueWaiter

    command = getattr(args, "queue_command", None)
    if command not in SUBCOMMANDS:
        raise ContractError(ErrorKind.INVALID_INPUT, "li queue needs a subcommand: set, pause, resume or list")
    service = _service()
    try:
        if command == "list":
            rows = service.listing()
        elif command == "set":
            rows = [_set(service, args)]
        elif command == "pause":
            rows = [service.pause(args.name)]
        else:
            rows = [service.resume(args.name)]
    except StoreRefused as exc:
        raise ContractError(ErrorKind.UNAVAILABLE, f"the queues cannot be used: {exc}",
                            {"reason_code": "store_refused"}) from None
    return QueueData(queues=[QueueRow(**{**row, "line": [QueueWaiter(**w) for w in row.get("line") or []]})
                             for row in rows]).to_wire()


def _set(service: Any, args: Namespace) -> dict[str, Any]:
    """`li queue set NAME`: --parallel and --max-tokens/--per, each kept when not given."""
    from lionrun.application.queueing import UNCHANGED

    tokens, per = getattr(args, "max_tokens", None), getattr(args, "per", None)
    if args.parallel is None and tokens is None and per is None:
        raise ContractError(ErrorKind.INVALID_INPUT, "li queue set needs --parallel N (or --parallel none), or "
                            "--max-tokens N --per WINDOW", {"argument": "--parallel"})
    parallel = UNCHANGED if args.parallel is None else _parallel(args.parallel)
    return dict(service.set(args.name, parallel, _budget(tokens, per)))


def _budget(tokens: str | None, per: str | None) -> Any:
    from lionrun.application.queueing import UNCHANGED
    from lionrun.domain.budget import parse_max_tokens
    from lionrun.domain.queue import parse_window

    if tokens is None and per is None:
        return UNCHANGED
    if tokens is not None and tokens.strip() == "none":
        if per is not None:
            raise ContractError(ErrorKind.INVALID_INPUT, "--max-tokens none takes no --per", {"argument": "--per"})
        return None
    if tokens is None or per is None:
        raise ContractError(ErrorKind.INVALID_INPUT, "a queue's budget takes both --max-tokens N and --per WINDOW",
                            {"argument": "--per" if per is None else "--max-tokens"})
    return parse_max_tokens(tokens.strip()), parse_window(per)


def _parallel(raw: str) -> int | None:
    from lionrun.domain.queue import check_parallel

    text = raw.strip()
    if text == "none":
        return None
    return check_parallel(int(text) if text.isdigit() and len(text) < 8 else text)


def _service() -> Any:
    from lionrun.application.queueing import QueueService
    from lionrun.entrypoints.container import get_container

    queues = get_container().core.queues()
    if queues is None:
        kind, _ = get_container().core.store().describe()
        raise ContractError(ErrorKind.UNAVAILABLE, f"the {kind} store keeps no queues yet",
                            {"reason_code": "queues_unsupported", "store": kind})
    return QueueService(queues, get_container().core.clock())


LINE_SHOWN = 10  # runs of a line a person is shown


def human(args: Namespace) -> int:
    data = run(args)
    rows = data["queues"]
    if not rows:
        sys.stdout.write("no queues (every run starts at once; `li queue set NAME --parallel N` makes one)\n")
        return 0
    sys.stdout.write(f"{'QUEUE':<16} {'PARALLEL':>8} {'RUNNING':>7} {'WAITING':>7}  STATE\n")
    for row in rows:
        limit = "-" if row["parallel"] is None else str(row["parallel"])
        state = "open"
        if row["paused"]:
            state = f"paused ({row['paused_reason']}"
            state += f" until {row['paused_until']}" if row["paused_until"] and row["paused_reason"] != "paused" else ""
            state += f", by {row['paused_by']})" if row["paused_by"] else ")"
        if row.get("max_tokens") is not None:
            state += f" · tokens {row['window_spent_tokens']}/{row['max_tokens']} per {row['per_seconds']:g} s"
        sys.stdout.write(f"{row['name']:<16} {limit:>8} {row['running']:>7} {row['waiting']:>7}  {state}\n")
        if row.get("line"):  # who starts next, with its priority
            from lionrun.domain.run import short_id

            shown = [f"{short_id(w['run_id'])}" + (f" (priority {w['priority']})" if w["priority"] else "")
                     for w in row["line"][:LINE_SHOWN]]
            more = len(row["line"]) - len(shown)
            sys.stdout.write(f"  next: {', '.join(shown)}{f', +{more}' if more > 0 else ''}\n")
    return 0
