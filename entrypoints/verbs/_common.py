"""What every verb module shares: the `Verb` protocol, its one registration idiom, and the run-id check."""

from __future__ import annotations

import os
import sys
from argparse import Namespace
from typing import Any, Protocol, cast

from domain.contract import ContractError, ErrorKind


class Verb(Protocol):
    """A verb module, as the parser and the dispatcher see it (`VERBS` is checked against it by mypy)."""

    def register(self, sub: Any) -> None:
        """Add this verb's parser(s) to the `add_subparsers()` action and `parser.set_defaults(verb=this(__name__))`."""

    def run(self, args: Namespace) -> dict[str, Any]:
        """The answer as plain data: the envelope's `data` under --machine."""

    def human(self, args: Namespace) -> int:
        """The answer for a person: text on stdout, one line on stderr for a refusal; the exit status."""


def this(name: str) -> Verb:
    """The registration idiom, in `register`: `parser.set_defaults(verb=this(__name__))`."""
    return cast(Verb, sys.modules[name])


def require_run_id(value: str) -> str:
    """Refuse anything not of the run-id form before it can name a path (the domain's one rule)."""
    from domain.run import require_run_id as check

    return check(value)


def for_person(args: Any) -> bool:
    """True in human mode: the dispatcher marks the namespace; --machine never does."""
    return bool(getattr(args, "for_person", False))


def run_id_arg(args: Any, value: str) -> str:
    """The run a RUN_ID argument names. Under --machine only an exact id; for a person also the
    last 4-6 hex digits of one, or `@last`, resolved from the store's folder names (no record is read)."""
    from domain.run import is_run_id, is_short_form, resolve_short_id

    if not for_person(args) or is_run_id(value):
        return require_run_id(value)
    if not is_short_form(value):
        raise ContractError(ErrorKind.INVALID_INPUT, f"{value!r} names no run: give a run id "
                            "(YYYYMMDDTHHMMSS-xxxxxx), its last 4-6 hex digits, or @last", {"run_id": value})
    from entrypoints.container import get_container

    return resolve_short_id(value, get_container().core.store().run_ids())


def silence(stream: Any) -> None:
    """Point a broken stream at /dev/null so the interpreter's final flush cannot fail loudly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
