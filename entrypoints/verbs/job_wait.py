"""`li job wait RUN_ID...`: bounded observation (D10)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import IO, Any

from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.entrypoints.verbs._common import selected_ids, selection_words, silence, this

# argparse (with gettext) is not imported by a read the dispatcher answers without a parser
# (entrypoints/startup/fast_path.py): its Namespace is an annotation only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace

SPINNER = "|/-\\"


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("wait", help="wait for runs to end, within a bounded window")
    parser.add_argument("run_ids", nargs="*", metavar="RUN_ID", help="run ids; - reads them from stdin")
    parser.add_argument("--max-wait", help="seconds to wait at most (0..600, default 60; 0 is a snapshot)")
    parser.add_argument("--poll-interval", help="seconds between observations (0.05..60, default 1)")
    parser.add_argument("--label", help="also wait on every run whose label is exactly this")
    parser.add_argument("--status", help="also wait on every run whose status is exactly this (e.g. running)")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    """The D10 result; a signal or a vanished caller still gets what was observed so far."""
    data: dict[str, Any] = _wait(args, requested_ids(args)).to_data()
    return data


def human(args: Namespace) -> int:
    """Live lines on stderr while waiting, the result on stdout; exit 0 only when every run succeeded."""
    from lionrun.domain.run import is_run_id, is_short_form
    from lionrun.entrypoints.verbs._common import run_id_arg

    # A person's short forms are resolved (an ambiguous one refuses the wait); anything else that
    # is not an id stays a per-id error, as under --machine, so the other runs are still waited on.
    ids = [run_id_arg(args, word) if not is_run_id(word) and is_short_form(word) else word
           for word in requested_ids(args)]
    for note in bound_notes(args):
        _say(sys.stderr, note)
    live = LiveLines(sys.stderr)
    stopped_by: list[int] = []
    result = _wait(args, ids, live.update, stopped_by)
    live.close()
    data = result.to_data()
    if result.interrupted:
        _say(sys.stderr, "wait stopped by a signal; the runs are untouched. Observed so far:")
    args._interrupted = result.interrupted
    code = show(data, args, exit_codes(result))
    if result.interrupted and stopped_by:
        going = list(dict.fromkeys(data["pending"]))
        if going:  # the terminal is only a view: say how to watch again and how to kill
            from lionrun.entrypoints.verbs._common import stopped_watching

            stopped_watching(going, "li job wait {}")
        return 128 + stopped_by[0]
    return code


def bound_notes(args: Namespace) -> list[str]:
    """One line for each of --max-wait and --poll-interval that was not used as given (a person's
    typo would otherwise become a silent snapshot); --machine echoes both values instead."""
    from lionrun.domain.observation import (
        MAX_WAIT_BOUNDS,
        MAX_WAIT_DEFAULT,
        POLL_BOUNDS,
        POLL_DEFAULT,
        clamp,
        number_of,
    )

    notes = []
    for flag, raw, bounds, default in (("--max-wait", args.max_wait, MAX_WAIT_BOUNDS, MAX_WAIT_DEFAULT),
                                       ("--poll-interval", args.poll_interval, POLL_BOUNDS, POLL_DEFAULT)):
        if raw is None:
            continue
        used = clamp(raw, bounds, default).effective
        number = number_of(raw)
        if number is None or number != number:  # not a number, or NaN
            notes.append(f"note: {flag} {raw!r} is not a number; using {used:g}"
                         + (" (a snapshot)" if flag == "--max-wait" and used == 0 else ""))
        elif number != used:
            notes.append(f"note: {flag} {raw} is {'above' if number > used else 'below'} "
                         f"{bounds[0]:g}..{bounds[1]:g}; using {used:g}")
    return notes


def exit_codes(result: Any) -> dict[str, int]:
    """The work's own exit status of each run that ended without succeeding (a person's view only)."""
    codes: dict[str, int] = {}
    for run_id, seen in result.seen.items():
        observed = getattr(seen, "observed", None)
        code = getattr(getattr(observed, "run", None), "exit_code", None)
        if observed is not None and observed.derivation.terminal and observed.derivation.outcome != "succeeded" \
                and isinstance(code, int) and not isinstance(code, bool):
            codes[run_id] = code
    return codes


def show(data: dict[str, Any], args: Namespace, codes: dict[str, int] | None = None) -> int:
    """One line per requested id on stdout, in the live frame's columns, then why the call ended
    and the count by outcome on stderr. Exit 0 only when every run ended and succeeded."""
    lines = [_final_line(entry, (codes or {}).get(entry["run_id"])) for entry in data["runs"]]
    _say(sys.stdout, "\n".join(lines))
    _say(sys.stderr, _summary(data, interrupted=getattr(args, "_interrupted", False)))
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
    selected = selected_ids(args)
    if selected is not None:
        if not selected and not ids:
            raise ContractError(ErrorKind.NOT_FOUND, "no run matches " + selection_words(args),
                                {"label": args.label, "status": args.status})
        ids.extend(run_id for run_id in selected if run_id not in ids)
    if not ids:
        raise ContractError(ErrorKind.INVALID_INPUT, "li job wait needs at least one run id (or - to read them from stdin, "
                            "or --label/--status)")
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


def _wait(args: Namespace, ids: list[str], on_pass: Callable[[Any], None] | None = None,
          stopped_by: list[int] | None = None) -> Any:
    from lionrun.application.wait import StopFlag
    from lionrun.entrypoints.container import get_container

    waiter = get_container().waits.waiter()
    flag = StopFlag()
    # one pass, no pause (a snapshot): nothing for a signal to stop early, no handlers set
    stopping = nullcontext() if _snapshot(args.max_wait) else _stopping_on_signals(
        flag, [] if stopped_by is None else stopped_by)
    with stopping:
        return waiter.wait(ids, args.max_wait, args.poll_interval, stop=flag, on_pass=on_pass)


def _snapshot(max_wait: str | None) -> bool:
    """`--max-wait 0`: a snapshot (the waiter still checks the value)."""
    try:
        return max_wait is not None and float(max_wait) == 0.0
    except ValueError:
        return False


@contextmanager
def _stopping_on_signals(flag: Any, stopped_by: list[int]) -> Iterator[None]:
    """SIGINT and SIGTERM stop the observation, never the runs; the previous handlers come back after.

    `stopped_by` gets the signal's number, so a person's shell sees 130 for Ctrl-C (128 + SIGINT)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    wanted = (signal.SIGINT, signal.SIGTERM)
    previous = {signum: signal.getsignal(signum) for signum in wanted}
    def stop(signum: int, _frame: Any) -> None:
        stopped_by.append(signum)
        flag.request()

    for signum in wanted:
        signal.signal(signum, stop)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class LiveLines:
    """One line per run on stderr: redrawn in place on a terminal, plain lines on changes otherwise.

    On a terminal each frame fits the screen (every line cut to its width, so none wraps, and no
    more lines than it has rows, so the cursor can always climb back to the frame's top); only runs
    still going are animated, and the frame is erased at the end, so the answer is shown once.
    """

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.tty = _isatty(stream)
        self.drawn = 0
        self.frame = 0
        self.last: dict[str, str] = {}

    def update(self, result: Any) -> None:
        rows = [_live_row(result.seen[run_id]) for run_id in dict.fromkeys(result.requested_ids)]
        if self.tty:
            self._redraw(rows)
        else:
            self._changes(rows)
        self.frame += 1

    def _redraw(self, rows: list[tuple[str, str, str]]) -> None:
        from lionrun.entrypoints.table import cut

        columns, lines = _screen(self.stream)
        spin = SPINNER[self.frame % len(SPINNER)]
        marked = [f"{spin if state in LIVE_STATES else _mark(state)} {text}" for _run_id, state, text in rows]
        room = max(1, lines - 1)  # the line the cursor rests on is never part of the frame
        if len(marked) > room:
            live = sum(1 for _run_id, state, _text in rows if state in LIVE_STATES)
            shown = _choose(rows, room - 1)
            marked = [marked[i] for i in shown]
            marked.append(f"… {len(rows) - len(shown)} more ({live} still going in all)")
        body = "".join(f"\x1b[2K{cut(line, max(1, columns - 1))}\n" for line in marked)
        if _say(self.stream, self._erase() + body, end=""):
            self.drawn = len(marked)

    def _erase(self) -> str:
        """Back to the frame's first line, and everything from there down cleared."""
        return (f"\x1b[{self.drawn}F" if self.drawn else "\r") + "\x1b[J"

    def _changes(self, rows: list[tuple[str, str, str]]) -> None:
        for run_id, state, text in rows:
            if self.last.get(run_id) != state:
                self.last[run_id] = state
                _say(self.stream, text)

    def close(self) -> None:
        """The live frame goes away: the final answer below it says the same once, on stdout."""
        if self.tty and self.drawn:
            _say(self.stream, self._erase(), end="")
            self.drawn = 0


LIVE_STATES = frozenset({"running", "preparing"})


def _mark(state: str) -> str:
    return {"succeeded": "✓", "failed": "✗"}.get(state.split(":", 1)[-1], "·")


def _choose(rows: list[tuple[str, str, str]], room: int) -> list[int]:
    """Which rows a frame with `room` lines shows: runs still going first, then in the order asked."""
    going = [i for i, (_run_id, state, _text) in enumerate(rows) if state in LIVE_STATES]
    rest = [i for i in range(len(rows)) if i not in set(going)]
    return sorted((going + rest)[:max(0, room)])


def _screen(stream: IO[str]) -> tuple[int, int]:
    """(columns, lines) of the terminal behind `stream`, asked each frame so a resize is followed."""
    import os

    try:
        size = os.get_terminal_size(stream.fileno())
        return max(1, size.columns), max(1, size.lines)
    except (OSError, ValueError, AttributeError):
        return 80, 24


def _live_row(seen: Any) -> tuple[str, str, str]:
    """(run id, what changed-detection keys on, the line shown)."""
    if seen.observed is None:
        kind = seen.error.kind if seen.error is not None else "unobserved"
        return seen.run_id, f"error:{kind}", f"{seen.run_id}  error: {kind}"
    derivation = seen.observed.derivation
    status = derivation.status
    state = status if not derivation.terminal else f"{status}:{derivation.outcome}"
    if not derivation.terminal and not derivation.stopped and not derivation.aged_preparing:
        state = "preparing" if status == "preparing" else "running"
    from lionrun.domain.run import printable

    label = seen.observed.run.label
    shown = f"  {printable(label)}" if isinstance(label, str) and label else ""
    return seen.run_id, state, f"{seen.run_id}  {status:<{STATUS_WIDTH}}  {_elapsed(seen.observed)}{shown}"


def _elapsed(observed: Any) -> str:
    """How long the run has been going (or went, when it ended)."""
    from lionrun.domain.run import parse_iso

    seconds = observed.derivation.age_seconds
    try:
        start, end = parse_iso(observed.run.submitted_at), parse_iso(observed.run.finished_at)
    except ValueError:
        start = end = None
    if start is not None and end is not None:
        seconds = (end - start).total_seconds()
    from lionrun.domain.timetext import duration

    return duration(seconds)


STATUS_WIDTH = 9  # `completed`, `preparing`, `cancelled`: the live and the final lines share the column
OUTCOME_WIDTH = 9  # `succeeded`, `cancelled`


def _final_line(entry: dict[str, Any], exit_code: int | None = None) -> str:
    """`  RUN_ID  STATUS     OUTCOME    (reason)  exit code N`: the columns of the live frame, whose
    mark and space the two leading spaces stand for."""
    if entry["error"] is not None:
        return f"  {entry['run_id']}  error {entry['error']['kind']}: {entry['error']['message']}"
    outcome = entry["outcome"] or ("-" if entry["terminal"] else "not ended")
    reason = f"  ({entry['reason_code']})" if entry["reason_code"] else ""
    code = f"  exit code {exit_code}" if exit_code is not None else ""
    return (f"  {entry['run_id']}  {entry['status']:<{STATUS_WIDTH}}  {outcome:<{OUTCOME_WIDTH}}"
            f"{reason}{code}").rstrip()


OUTCOME_ORDER = ("succeeded", "failed", "cancelled", "indeterminate")


def _summary(data: dict[str, Any], interrupted: bool = False) -> str:
    """`3 ended: 2 succeeded, 1 failed`, then what did not end and why."""
    seen: dict[str, dict[str, Any]] = {}
    for entry in data["runs"]:  # a run asked for twice is counted once
        seen.setdefault(entry["run_id"], entry)
    ended = [e for e in seen.values() if e["error"] is None and e["terminal"]]
    counts: dict[str, int] = {}
    for entry in ended:
        counts[entry["outcome"] or "-"] = counts.get(entry["outcome"] or "-", 0) + 1
    order = [o for o in OUTCOME_ORDER if o in counts] + sorted(set(counts) - set(OUTCOME_ORDER))
    parts = []
    if ended:
        parts.append(f"{len(ended)} ended: " + ", ".join(f"{counts[o]} {o}" for o in order))
    pending = len(dict.fromkeys(data["pending"]))
    if pending:
        parts.append(f"{pending} still running" + (" when you stopped watching" if interrupted
                                                    else " when the window closed"))
    if data["stopped_without_end"]:
        parts.append(f"{len(data['stopped_without_end'])} stopped without recording an end")
    if data["unresolved_spawn"]:
        parts.append(f"{len(data['unresolved_spawn'])} never started "
                     f"(preparing for over {data['unresolved_spawn_after']:g}s)")
    errors = sum(1 for entry in seen.values() if entry["error"] is not None)
    if errors:
        parts.append(f"{errors} could not be observed")
    return "; ".join(parts) or "no run has ended"


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


