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


def silence(stream: Any) -> None:
    """Point a broken stream at /dev/null so the interpreter's final flush cannot fail loudly."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
