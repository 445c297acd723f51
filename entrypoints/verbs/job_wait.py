"""`li job wait RUN_ID...`: bounded observation (D10)."""

from __future__ import annotations

import sys
from argparse import Namespace
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

from domain.contract import ContractError, ErrorKind
from entrypoints.verbs._common import silence, this

SPINNER = "|/-\\"


def register(sub: Any) -> None:
    parser = sub.add_parser("wait", help="wait for runs to end, within a bounded window")
    parser.add_argument("run_ids", nargs="*", metavar="RUN_ID", help="run ids; - reads them from stdin")
    parser.add_argument("--max-wait", help="seconds to wait at most (0..600, default 60; 0 is a snapshot)")
    parser.add_argument("--poll-interval", help="seconds between observations (0.05..60, default 1)")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    """The D10 result; a signal or a vanished caller still gets what was observed so far."""
    data: dict[str, Any] = _wait(args, requested_ids(args)).to_data()
    return data


def human(args: Namespace) -> int:
    """Live lines on stderr while waiting, the result on stdout; exit 0 only when every run succeeded."""
    from domain.run import is_run_id, is_short_form
    from entrypoints.verbs._common import run_id_arg

    # A person's short forms are resolved (an ambiguous one refuses the wait); anything else that
    # is not an id stays a per-id error, as under --machine, so the other runs are still waited on.
    ids = [run_id_arg(args, word) if not is_run_id(word) and is_short_form(word) else word
           for word in requested_ids(args)]
    live = LiveLines(sys.stderr)
    result = _wait(args, ids, live.update)
    live.close()
    if result.interrupted:
        _say(sys.stderr, "li: wait stopped by a signal; the runs are untouched. Observed so far:")
    return show(result.to_data(), args)


def show(data: dict[str, Any], args: Namespace) -> int:
    """One line per requested id on stdout, then why the call ended on stderr."""
    lines = [_final_line(entry) for entry in data["runs"]]
    _say(sys.stdout, "\n".join(lines))
    _say(sys.stderr, _summary(data))
    runs = data["runs"]
    return 0 if runs and all(e["error"] is None and e["outcome"] == "succeeded" for e in runs) else 1


def requested_ids(args: Namespace, stdin: IO[bytes] | None = None) -> list[str]:
    """Ids from argv in order; each `-` is replaced by the whitespace-separated ids read from stdin."""
    ids: list[str] = []
    piped: list[str] | None = None
    for word in args.run_ids:
        if word != "-":
            ids.append(word)
            continue
        if piped is None:
            piped = _read_stdin(stdin)
        ids.extend(piped)
    if not ids:
        raise ContractError(ErrorKind.INVALID_INPUT, "li job wait needs at least one run id (or - to read them from stdin)")
    return ids


def _read_stdin(stdin: IO[bytes] | None) -> list[str]:
    source = stdin if stdin is not None else getattr(sys.stdin, "buffer", None)
    if source is None:
        raise ContractError(ErrorKind.INVALID_INPUT, "- asks for run ids on stdin, but there is no stdin")
    try:
        raw = source.read()
    except (OSError, ValueError) as exc:
        raise ContractError(ErrorKind.INVALID_INPUT, f"cannot read run ids from stdin: {exc}") from exc
    return raw.decode("utf-8", errors="surrogateescape").split()


def _wait(args: Namespace, ids: list[str], on_pass: Callable[[Any], None] | None = None) -> Any:
    from application.wait import StopFlag
    from entrypoints.container import get_container

    waiter = get_container().waits.waiter()
    flag = StopFlag()
    with _stopping_on_signals(flag):
        return waiter.wait(ids, args.max_wait, args.poll_interval, stop=flag, on_pass=on_pass)


@contextmanager
def _stopping_on_signals(flag: Any) -> Iterator[None]:
    """SIGINT and SIGTERM stop the observation, never the runs; the previous handlers come back after."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    wanted = (signal.SIGINT, signal.SIGTERM)
    previous = {signum: signal.getsignal(signum) for signum in wanted}
    for signum in wanted:
        signal.signal(signum, lambda _signum, _frame: flag.request())
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class LiveLines:
    """One line per run on stderr: redrawn in place on a terminal, plain lines on changes otherwise."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.tty = _isatty(stream)
        self.drawn = 0
        self.frame = 0
        self.last: dict[str, str] = {}

    def update(self, result: Any) -> None:
        rows = [_live_row(result.seen[run_id]) for run_id in dict.fromkeys(result.requested_ids)]
        if self.tty:
            self._redraw(rows, result.partition.settled)
        else:
            self._changes(rows)
        self.frame += 1

    def _redraw(self, rows: list[tuple[str, str, str]], settled: bool) -> None:
        spin = " " if settled else SPINNER[self.frame % len(SPINNER)]
        up = f"\x1b[{self.drawn}F" if self.drawn else ""
        body = "".join(f"\x1b[2K{spin} {text}\n" for _run_id, _state, text in rows)
        self.drawn = len(rows) if _say(self.stream, up + body, end="") else self.drawn

    def _changes(self, rows: list[tuple[str, str, str]]) -> None:
        for run_id, state, text in rows:
            if self.last.get(run_id) != state:
                self.last[run_id] = state
                _say(self.stream, text)

    def close(self) -> None:
        """Nothing to undo: the last drawing stays as the record of what was seen."""


def _live_row(seen: Any) -> tuple[str, str, str]:
    """(run id, what changed-detection keys on, the line shown)."""
    if seen.observed is None:
        kind = seen.error.kind if seen.error is not None else "unobserved"
        return seen.run_id, f"error:{kind}", f"{seen.run_id}  error: {kind}"
    status = seen.observed.derivation.status
    return seen.run_id, status, f"{seen.run_id}  {status}  {_elapsed(seen.observed)}"


def _elapsed(observed: Any) -> str:
    """How long the run has been going (or went, when it ended)."""
    from domain.run import parse_iso

    seconds = observed.derivation.age_seconds
    try:
        start, end = parse_iso(observed.run.submitted_at), parse_iso(observed.run.finished_at)
    except ValueError:
        start = end = None
    if start is not None and end is not None:
        seconds = (end - start).total_seconds()
    seconds = max(0, int(seconds))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


def _final_line(entry: dict[str, Any]) -> str:
    if entry["error"] is not None:
        return f"{entry['run_id']}  error {entry['error']['kind']}: {entry['error']['message']}"
    outcome = entry["outcome"] or ("-" if entry["terminal"] else "not ended")
    reason = f"  ({entry['reason_code']})" if entry["reason_code"] else ""
    return f"{entry['run_id']}  {entry['status']}  {outcome}{reason}"


def _summary(data: dict[str, Any]) -> str:
    if data["all_terminal"]:
        return "li: every run has ended"
    parts = []
    if data["pending"]:
        parts.append(f"{len(data['pending'])} still pending when the window closed")
    if data["stopped_without_end"]:
        parts.append(f"{len(data['stopped_without_end'])} stopped without recording an end")
    if data["unresolved_spawn"]:
        parts.append(f"{len(data['unresolved_spawn'])} never started "
                     f"(preparing for over {data['unresolved_spawn_after']:g}s)")
    errors = sum(1 for entry in data["runs"] if entry["error"] is not None)
    if errors:
        parts.append(f"{errors} could not be observed")
    return "li: " + ("; ".join(parts) or "not every run has ended")


def _isatty(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (OSError, ValueError, AttributeError):
        return False


def _say(stream: IO[str], text: str, end: str = "\n") -> bool:
    """Write for a person; a closed stream (the caller went away) is not an error of the wait."""
    try:
        stream.write(text + end)
        stream.flush()
    except (OSError, ValueError):
        silence(stream)
        return False
    return True


