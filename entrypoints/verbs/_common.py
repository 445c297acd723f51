"""Helpers shared by verb modules: the verb-module handle and the run-id argument check."""

from __future__ import annotations

import sys
from typing import Any


def this(name: str) -> Any:
    """The module object for `set_defaults(verb=...)`."""
    return sys.modules[name]


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
        from domain.contract import ContractError, ErrorKind

        raise ContractError(ErrorKind.INVALID_INPUT, f"{value!r} names no run: give a run id "
                            "(YYYYMMDDTHHMMSS-xxxxxx), its last 4-6 hex digits, or @last", {"run_id": value})
    from entrypoints.container import get_container

    return resolve_short_id(value, get_container().core.store().run_ids())


def silence(stream: Any) -> None:
    """Point a broken stream at /dev/null so the interpreter's final flush cannot fail loudly."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
