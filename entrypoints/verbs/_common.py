"""What every verb module shares: the `Verb` protocol, its one registration idiom, and the run-id check."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.entrypoints.environment import silence as silence  # the verbs take it from here

# typing.TYPE_CHECKING without importing typing: `li handshake` never loads it; the
# protocol is for mypy, which holds every verb module of a table to it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace
    from typing import Any, Protocol

    class Verb(Protocol):
        """A verb module, as the parser and the dispatcher see it (`VERBS` is checked against it by mypy)."""

        def register(self, sub: Any, words: list[str] | None = None) -> None:
            """Add this verb's parser(s) to the `add_subparsers()` action and `parser.set_defaults(verb=this(__name__))`.

            `words` are the request's words after this verb's name (None: build for any request); a
            verb with subcommands registers them with `entrypoints.startup.lazy_verbs.register_table`."""

        def run(self, args: Namespace) -> dict[str, Any]:
            """The answer as plain data: the envelope's `data` under --machine."""

        def human(self, args: Namespace) -> int:
            """The answer for a person: text on stdout, one line on stderr for a refusal; the exit status."""


def this(name: str) -> Verb:
    """The registration idiom, in `register`: `parser.set_defaults(verb=this(__name__))`."""
    found: Verb = sys.modules[name]  # a module: mypy holds the tables' modules to Verb
    return found


def require_run_id(value: str) -> str:
    """Refuse anything not of the run-id form before it can name a path (the domain's one rule)."""
    from lionrun.domain.run import require_run_id as check

    return check(value)


def for_person(args: Any) -> bool:
    """True in human mode: the dispatcher marks the namespace; --machine never does."""
    return bool(getattr(args, "for_person", False))


def run_id_arg(args: Any, value: str) -> str:
    """The run a RUN_ID argument names. Under --machine only an exact id; for a person also the
    last 4-6 hex digits of one, or `@last`, resolved from the store's folder names (no record is read)."""
    from lionrun.domain.run import is_run_id, is_short_form, resolve_short_id

    if not for_person(args) or is_run_id(value):
        return require_run_id(value)
    if not is_short_form(value):
        raise ContractError(ErrorKind.INVALID_INPUT, f"{value!r} names no run: give a run id "
                            "(YYYYMMDDTHHMMSS-xxxxxx), its last 4-6 hex digits, or @last", {"run_id": value})
    from lionrun.entrypoints.container import get_container

    store = get_container().core.store()

    def submitted(run_id: str) -> str | None:  # asked only of runs made in the newest second
        try:
            return str(store.read(run_id).submitted_at)
        except Exception:  # noqa: BLE001 - a record that cannot be read counts as the oldest
            return None

    return resolve_short_id(value, store.run_ids(), submitted)


def stopped_watching(run_ids: Sequence[str], again: str) -> int:
    """A person's ^C in a foreground view: the view stops, the work goes on. One line
    says so, how to watch again and how to kill; the exit is 130 (128 + SIGINT), as a shell's."""
    from lionrun.domain.run import short_id

    shorts = " ".join(short_id(run_id) for run_id in run_ids)
    what = f"run {shorts} keeps" if len(run_ids) == 1 else f"runs {shorts} keep"
    fresh = "\n" if _isatty(sys.stderr) else ""  # past the terminal's echoed ^C
    print(f"{fresh}li: stopped watching; {what} running. Again: {again.format(shorts)} · kill: li job kill {shorts}",
          file=sys.stderr, flush=True)
    return 130


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (OSError, ValueError, AttributeError):
        return False


def print_help(args: Any, *path: str) -> int:
    """A person who named a verb with nothing to do (`li`, `li job`, `li agent`) gets its help on
    stdout and exit 0, instead of an error; --machine still refuses."""
    parser = getattr(args, "tree", None)
    for name in path:
        found = None
        for action in getattr(parser, "_actions", []):
            choices = getattr(action, "choices", None)
            if isinstance(choices, dict) and name in choices:
                found = choices[name]
        parser = found
    if parser is None:
        return -1
    sys.stdout.write(parser.format_help())
    return 0


def clamp_note(raw: str | None, flag: str, maximum: int) -> None:
    """A person's count above its bound is used as the bound, and said so on stderr."""
    if raw is None:
        return
    text = str(raw).strip()
    if text.isdigit() and text.isascii() and (len(text.lstrip("0")) > len(str(maximum)) or int(text) > maximum):
        print(f"note: {flag} {text} is above its bound; using {maximum}", file=sys.stderr)


class StoreLocked:
    """`with StoreLocked(home):` — the body runs holding the store's lock (adapters/store_lock.py):
    one prune, rm, store copy or doctor --fix at a time on a store. A lock another li holds past
    the wait is `conflict` (store_busy), one that cannot be taken `unavailable`, another user's
    store `unavailable` (not_store_owner) unless the body only reads; each before anything changed. A class, not contextlib: `li handshake` imports this module."""

    def __init__(self, home: str, reads_only: bool = False) -> None:
        self.home = home
        self.reads_only = reads_only  # another user's store is then read without its lock
        self.release: Any = None

    def __enter__(self) -> None:
        from lionrun.adapters.store_lock import hold
        from lionrun.application.ports import NotStoreOwner, StoreBusy, StoreRefused

        try:
            self.release = hold(self.home, reads_only=self.reads_only)
        except NotStoreOwner as exc:
            raise ContractError(ErrorKind.UNAVAILABLE, str(exc), {"reason_code": "not_store_owner"}) from None
        except StoreBusy as exc:
            raise ContractError(ErrorKind.CONFLICT, str(exc), {"reason_code": "store_busy"}) from None
        except StoreRefused as exc:
            raise ContractError(ErrorKind.UNAVAILABLE, str(exc), {"reason_code": "store_lock_refused"}) from None

    def __exit__(self, *exc_info: object) -> None:
        if self.release is not None:
            self.release()
            self.release = None


def selected_ids(args: Namespace) -> list[str] | None:
    """The runs `--label`/`--status` name, newest first; None when neither was given."""
    from lionrun.domain.run import status_filter

    label, status = getattr(args, "label", None), status_filter(getattr(args, "status", None))
    if label is None and status is None:
        return None
    from lionrun.entrypoints.container import get_container

    ids: list[str] = get_container().reads.reads().select(status, label)
    return ids


def selection_words(args: Namespace) -> str:
    words = [f"{flag} {value!r}" for flag, value in (("--label", args.label), ("--status", args.status))
             if value is not None]
    return " and ".join(words)
