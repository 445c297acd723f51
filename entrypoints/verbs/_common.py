"""Helpers shared by verb modules: the verb-module handle and the run-id argument check."""

from __future__ import annotations

import sys
from typing import Any

from domain.contract import ContractError, ErrorKind


def this(name: str) -> Any:
    """The module object for `set_defaults(verb=...)`."""
    return sys.modules[name]


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
