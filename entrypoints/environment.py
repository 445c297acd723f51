"""Faults of the environment `li` runs in, before or around any answer (D8). Standard library only.

Shared by the bootstrap (which reports them) and the dispatcher (which raises them), so neither
imports the other's names.
"""

from __future__ import annotations

import sys
from typing import Final

# Modules a run needs. A broken installation is diagnosed by exit 78 before any run exists.
# pydantic is not one: the wire model is stdlib dataclasses, and only tools/gen_schema.py (the
# schema) imports pydantic, so a submit does not pay for importing it (issue 18).
REQUIRED_MODULES: Final = ("psutil", "filelock", "dependency_injector", "yaml")
EXIT_CONFIG: Final = 78  # EX_CONFIG (D8); mirrors domain.contract.EXIT_CONFIG without importing it
EXIT_IOERR: Final = 74  # EX_IOERR: the envelope could not be written to stdout, a D8 transport fault


class EnvironmentFault(Exception):
    """A required module cannot be imported and nothing has been executed: exit 78."""


def missing_required() -> str | None:
    """The first required module the import system cannot even find (cheap: nothing is imported)."""
    from importlib.util import find_spec

    for name in REQUIRED_MODULES:
        try:
            if find_spec(name) is None:
                return name
        except (ImportError, ValueError):
            return name
    return None


def import_required() -> None:
    """Import every required module here and now; raise EnvironmentFault on the first that fails."""
    import importlib

    for name in REQUIRED_MODULES:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - any failure to import is an environment fault
            raise EnvironmentFault(f"{name}: {type(exc).__name__}: {exc}") from exc


def transport_fault(reason: str) -> int:
    """One line on stderr (when there is one), exit 74: the caller gets no envelope (D8)."""
    from contextlib import suppress

    if sys.stderr is not None:
        with suppress(OSError, ValueError):
            print(f"li: transport fault: {' '.join(reason.split())}", file=sys.stderr, flush=True)
    return EXIT_IOERR


def diagnose(exc: BaseException | str) -> int:
    """One line on stderr, nothing on stdout, exit 78."""
    reason = " ".join(str(exc).split())
    print(f"li: environment fault: required module not importable: {reason}", file=sys.stderr)
    return EXIT_CONFIG
