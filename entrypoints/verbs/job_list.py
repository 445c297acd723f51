"""`li job list`: newest first, bounded, and says when truncated (D6); filters by status, label,
model and age; a person's table fits the terminal (`--wide` shows every cell whole)."""

from __future__ import annotations

import sys
from typing import Any

from lionrun.entrypoints.verbs._common import this

# argparse (with gettext) is not imported by a read the dispatcher answers without a parser
# (entrypoints/startup/fast_path.py): its Namespace is an annotation only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace
    from datetime import datetime

SHORT_ID_WIDTH = 6  # the hex part, which names the run for a person (`li job status c3406e`)


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("list", help="list runs, newest first")
    parser.add_argument("--limit", help="at most this many rows (default 50, max 1000)")
    parser.add_argument("--status", help="only rows whose status is exactly this")
    parser.add_argument("--label", help="only runs whose label is exactly this")
    parser.add_argument("--model", help="only runs with this model (a provider, e.g. claude, or claude/opus)")
    parser.add_argument("--parent", metavar="RUN_ID",
                        help="only the runs that run's confined work submitted through li (its children)")
    parser.add_argument("--since", help="only runs submitted since: a duration back (30m, 2h, 7d) or an ISO time")
    parser.add_argument("--sort", metavar="newest|priority",
                        help="the order of the rows: newest first (default), or the highest --priority first "
                             "(equal ones newest first)")
    parser.add_argument("--wide", action="store_true", help="show every column and cell whole, whatever the width")
    parser.add_argument("--watch", action="store_true", help="redraw the list every 2 seconds until Ctrl-C")
    parser.set_defaults(verb=this(__name__))


WATCH_SECONDS = 2.0


def run(args: Namespace) -> dict[str, Any]:
    from lionrun.application.reads import LIMIT_DEFAULT, LIMIT_MAX, bounded_count

    if getattr(args, "watch", False):
        from lionrun.domain.contract import ContractError, ErrorKind

        raise ContractError(ErrorKind.INVALID_INPUT, "--watch redraws a table for people and is not available "
                            "under --machine; call li job list again")
    from lionrun.entrypoints.container import get_container

    limit = bounded_count(args.limit, "--limit", LIMIT_DEFAULT, LIMIT_MAX, minimum=1)
    since = None
    if args.since is not None:
        from lionrun.domain.run import parse_since

        since = parse_since(args.since, get_container().core.clock().now())
    from lionrun.domain.run import status_filter

    status = status_filter(args.status)
    parent = None
    if getattr(args, "parent", None) is not None:
        from lionrun.entrypoints.verbs._common import run_id_arg

        parent = run_id_arg(args, args.parent)
    order = sort_order(getattr(args, "sort", None))
    result: dict[str, Any] = get_container().reads.reads().listing(limit, status, args.label, args.model, since, parent)
    if order == "priority":  # the highest first; equal ones newest first, to the microsecond
        # (run ids count seconds: two submitted in one second are told apart by submitted_at)
        newest = sorted(result["runs"], key=lambda row: str(row.get("submitted_at") or ""), reverse=True)
        result["runs"] = sorted(newest, key=lambda row: -(row.get("priority") or 0))
    return result


SORTS = ("newest", "priority")


def sort_order(text: str | None) -> str:
    """`--sort`: newest (default) or priority; anything else is refused."""
    if text is None or text in SORTS:
        return text or "newest"
    from lionrun.domain.contract import ContractError, ErrorKind

    raise ContractError(ErrorKind.INVALID_INPUT, f"--sort must be newest or priority, not {text[:80]!r}",
                        {"argument": "--sort", "value": text[:200]})


def human(args: Namespace) -> int:
    from lionrun.application.reads import LIMIT_MAX
    from lionrun.entrypoints.verbs._common import clamp_note

    clamp_note(args.limit, "--limit", LIMIT_MAX)
    if getattr(args, "watch", False):
        return watch(args)
    return show(run(args), args)


def watch(args: Namespace) -> int:
    """`--watch`: the list redrawn every WATCH_SECONDS (the screen cleared first on a terminal;
    a pipe gets each list after a blank line) until Ctrl-C, which only stops watching (exit 130)."""
    import time

    args.watch = False
    tty = sys.stdout.isatty()
    try:
        while True:
            data = run(args)
            if tty:
                sys.stdout.write("\x1b[H\x1b[2J")
            show(data, args)
            sys.stdout.write("" if tty else "\n")
            sys.stdout.flush()
            time.sleep(WATCH_SECONDS)
    except KeyboardInterrupt:
        sys.stdout.flush()
        return 130


def columns(with_host: bool = False, with_cost: bool = False, with_changes: bool = False) -> list[Any]:
    from lionrun.entrypoints.table import Column

    # drop: the higher goes first when even the narrowest cells do not fit. AGE outlasts STARTED
    # (the same moment, in a third of the cells) and goes before MODEL, the first of the essentials.
    heads = [Column("RUN ID"), Column("KIND", drop=14), Column("MODEL", minimum=5, drop=6),
             Column("STATUS", minimum=9), Column("OUTCOME"), Column("EXIT", drop=2), Column("AGE", drop=7),
             Column("STARTED", drop=12), Column("DURATION", drop=4),
             Column("LABEL", minimum=5, drop=16), Column("COMMAND", minimum=7, drop=18)]
    if with_host:
        heads.insert(HOST_COLUMN, Column("HOST", minimum=HOST_SHORT, drop=10))
    if with_cost:
        heads.insert(COST_COLUMN, Column("COST", drop=8))
    if with_changes:  # before LABEL and COMMAND, the last two
        heads.insert(len(heads) - 2, Column("CHANGES", minimum=4, drop=8))
    return heads


def show_cost(rows: list[dict[str, Any]]) -> bool:
    """COST is shown when a row has one (a provider reported it); a blank cell is not reported."""
    return any(row.get("cost_usd") is not None for row in rows)


def show_changes(rows: list[dict[str, Any]]) -> bool:
    """The CHANGES column is shown when a listed run worked in its own worktree."""
    return any(row.get("changes") is not None or row.get("leg_worktrees") for row in rows)


STATUS_COLUMN = 3
HOST_COLUMN = 9  # before LABEL, only when shown (see show_host)
COST_COLUMN = 9  # after DURATION, only when some row has a cost (inserted before HOST)
# model, status, outcome, exit, age, duration: kept before whole ids
ESSENTIAL = frozenset({2, 3, 4, 5, 6, 8})
HOST_SHORT = 8  # the first 8 hex digits of a machine id name a host for a person, as a short id names a run


def show_host(rows: list[dict[str, Any]], shared: bool) -> bool:
    """The HOST column is shown on a shared store (every host's runs are listed there, so it is
    always shown, whatever the rows), or when the rows name more than one host on any store."""
    return shared or len({row.get("host") for row in rows if row.get("host")}) > 1


def short_host(host: str | None) -> str:
    """A host as a person reads it: a machine id's first 8 hex digits (`cut -c1-8 /etc/machine-id`),
    the name of a host known by its hostname, `-` for a record that names none."""
    if not host:
        return "-"
    if host.startswith("hostname:"):
        return host[len("hostname:"):]
    if len(host) == 32 and all(ch in "0123456789abcdef" for ch in host):
        return host[:HOST_SHORT]
    return host


def show(data: dict[str, Any], args: Namespace) -> int:
    """A table that fits the terminal; colour only on a terminal and only when NO_COLOR is unset or empty."""
    from lionrun.entrypoints.container import get_container
    from lionrun.entrypoints.settings import is_shared_store
    from lionrun.entrypoints.style import paint
    from lionrun.entrypoints.table import GAP, fit, lines, stdout_width

    now = get_container().core.clock().now()
    with_host = show_host(data["runs"], is_shared_store(get_container().config.store() or ""))
    with_cost = show_cost(data["runs"])
    with_changes = show_changes(data["runs"])
    heads = columns(with_host, with_cost, with_changes)
    width = None if args.wide else stdout_width()
    cells = [_cells(row, now, with_host, with_cost, with_changes) for row in data["runs"]]
    rows = [row for row, _ in cells]
    keep, widths = fit(heads, rows, width)
    if width is not None and not ESSENTIAL.issubset(keep):  # too narrow for whole ids: the short form names the run
        heads[0] = type(heads[0])("ID")
        rows = [[row[0][-SHORT_ID_WIDTH:] if row[1] != "?" else row[0], *row[1:]] for row in rows]
        keep, widths = fit(heads, rows, width)
    tones = ["bold", *(tone for _, tone in cells)]
    for line, tone in zip(lines(heads, rows, keep, widths), tones, strict=True):
        if tone == "bold":
            line = [paint(cell, "bold", sys.stdout) for cell in line]
        elif STATUS_COLUMN in keep:
            at = keep.index(STATUS_COLUMN)
            line[at] = paint(line[at], tone, sys.stdout)
        print(GAP.join(line).rstrip())
    if data["truncated"]:
        print(f"(showing the newest {data['limit']}; more runs exist — use --limit)", file=sys.stderr)
    return 0


def _cells(row: dict[str, Any], now: datetime, with_host: bool = False,
           with_cost: bool = False, with_changes: bool = False) -> tuple[list[str], str | None]:
    cells, tone = _all_cells(row, now)
    if with_host:
        cells.insert(HOST_COLUMN, short_host(row.get("host")) if row["error"] is None else "")
    if with_cost:
        cost = row.get("cost_usd")
        cells.insert(COST_COLUMN, "" if cost is None else f"${cost:.2f}")
    if with_changes:
        from lionrun.entrypoints.verbs._views import changes_cell

        cells.insert(len(cells) - 2, changes_cell(row.get("changes"), row.get("leg_worktrees")))
    return cells, tone


def _all_cells(row: dict[str, Any], now: datetime) -> tuple[list[str], str | None]:
    if row["error"] is not None:
        error = row["error"]
        return [row["run_id"], "?", "", f"unreadable ({error['reason_code']})", "-", "", "", "", "", "", ""], "red"
    status = row["status"] + (" (orphan?)" if row["possibly_orphaned"] else "")
    from lionrun.entrypoints.style import outcome_colour

    tone = outcome_colour(row["outcome"]) if row["outcome"] is not None else None
    code = row.get("exit_code")
    exit_text = str(code) if code is not None and row["terminal"] else ""
    started = row.get("started_at") or row["submitted_at"]
    return [row["run_id"], row["kind"], row.get("model") or "", status, row["outcome"] or "-", exit_text,
            _age(row["submitted_at"], now), _started(started, now), _duration(started, row.get("finished_at"), now),
            row["label"] or "", row.get("command") or ""], tone


def _moment(text: str | None) -> datetime | None:
    from lionrun.domain.timetext import moment

    return moment(text)


def _age(submitted: str | None, now: datetime) -> str:
    """How long ago the run was submitted: `42s`, `17m`, `5h`, `3d` (domain.timetext.age, as status says it)."""
    from lionrun.domain.timetext import age

    at = _moment(submitted)
    return "?" if at is None else age((now - at).total_seconds())


def _started(text: str | None, now: datetime) -> str:
    """Local time: `14:03:27` today, else `12-01 14:03` (domain.timetext, the one time style)."""
    from lionrun.domain.timetext import clock

    at = _moment(text)
    return "?" if at is None else clock(at, now)


def _duration(started: str | None, finished: str | None, now: datetime) -> str:
    """How long the run took, or has been going: `42s`, `3m07s`, `2h05m`, `3d04h`."""
    from lionrun.domain.timetext import duration

    begin, end = _moment(started), _moment(finished) or now
    if begin is None:
        return "?"
    return duration((end - begin).total_seconds())
