"""Faults of the environment `li` runs in, before or around any answer (D8). Standard library only.

Shared by the bootstrap (which reports them) and the dispatcher (which raises them), so neither
imports the other's names.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: a handshake never loads it
if TYPE_CHECKING:
    from typing import Any, Final

# Modules a run needs. A broken installation is diagnosed by exit 78 before any run exists.
# pydantic is not one a run needs: the wire model is msgspec, and pydantic checks only what a person
# or an agent writes (a flow spec, MCP tool arguments; domain/written.py), so `li orchestrate`
# imports it before it starts and an `li agent` submit never does.
REQUIRED_MODULES: Final = ("psutil", "filelock", "dependency_injector", "yaml")
# What a command that may allocate a run imports before it starts (exit 78 while nothing ran, D8).
# yaml reads only `li orchestrate`'s plan: an `li agent` submit, which neither it nor its runner
# ever imports, does not pay for it.
PRE_IMPORTS: Final = {
    "agent": ("psutil", "filelock", "dependency_injector"),
    "orchestrate": (*REQUIRED_MODULES, "pydantic"),
}
# A consumer's tests make li answer 78 on purpose (docs/wire-contract.md, exit statuses):
# li then behaves exactly as over a missing required module, before it reads anything or runs anything.
SIMULATE_ENVIRONMENT_FAULT: Final = "LI_SIMULATE_ENVIRONMENT_FAULT"
EXIT_CONFIG: Final = 78  # EX_CONFIG (D8); mirrors domain.contract.EXIT_CONFIG without importing it
EXIT_IOERR: Final = 74  # EX_IOERR: the envelope could not be written to stdout, a D8 transport fault


class EnvironmentFault(Exception):
    """A required module cannot be imported and nothing has been executed: exit 78."""


def missing_required() -> str | None:
    """The first required module the import system cannot even find (cheap: nothing is imported);
    with LI_SIMULATE_ENVIRONMENT_FAULT set (non-empty), a stand-in named after it."""
    import os

    if os.environ.get(SIMULATE_ENVIRONMENT_FAULT):
        return f"{SIMULATE_ENVIRONMENT_FAULT} is set (a simulated broken installation)"
    for name in REQUIRED_MODULES:
        try:
            if not findable(name):
                return name
        except (ImportError, ValueError):
            return name
    return None


def findable(name: str) -> bool:
    """`importlib.util.find_spec(name) is not None` for a top-level name, without importing
    importlib.util (with contextlib and warnings, on every `li handshake`).

    A module already imported counts when it has a spec (find_spec raises ValueError for one
    without: the caller counts that as missing too), and a None in sys.modules, which import
    refuses, does not; otherwise every finder on sys.meta_path is asked in turn, as import does.
    """
    if name in sys.modules:
        module = sys.modules[name]
        if module is None:
            return False
        if getattr(module, "__spec__", None) is None:
            raise ValueError(f"{name}.__spec__ is not set")
        return True
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is not None and find_spec(name, None) is not None:
            return True
    return False


def import_required(names: tuple[str, ...] = REQUIRED_MODULES) -> None:
    """Import the named required modules here and now; raise EnvironmentFault on the first that fails."""
    import importlib

    for name in names:
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


def silence(stream: Any) -> None:
    """Point a broken stream at /dev/null so the interpreter's final flush cannot fail loudly."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def diagnose(exc: BaseException | str) -> int:
    """One line on stderr, nothing on stdout, exit 78."""
    reason = " ".join(str(exc).split())
    print(f"li: environment fault: required module not importable: {reason}", file=sys.stderr)
    return EXIT_CONFIG
