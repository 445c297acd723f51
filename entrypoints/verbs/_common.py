"""Helpers shared by verb modules: argument types and the not-yet-built answer."""

from __future__ import annotations

import sys
from typing import Any, NoReturn

from domain.contract import ContractError, ErrorKind


def this(name: str) -> Any:
    """The module object for `set_defaults(verb=...)`."""
    return sys.modules[name]


def unbuilt(what: str) -> NoReturn:
    raise ContractError(ErrorKind.UNAVAILABLE, f"{what} is not available in this build")


def require_run_id(value: str) -> str:
    """Refuse anything not of the run-id form before it can name a path."""
    from domain.run import is_run_id

    if not is_run_id(value):
        raise ContractError(
            ErrorKind.INVALID_INPUT,
            f"{value!r} is not a run id (expected YYYYMMDDTHHMMSS-xxxxxx)",
            {"run_id": value},
        )
    return value
