"""The `li` console script. Standard library only until the import guard is in place (D8)."""

from __future__ import annotations

import os
import sys
from typing import IO

# Modules a run needs. A broken installation is diagnosed by exit 78 before any run exists.
REQUIRED_MODULES = ("pydantic", "psutil", "filelock", "dependency_injector", "yaml")
EXIT_CONFIG = 78  # EX_CONFIG (D8); mirrors domain.contract.EXIT_CONFIG without importing it
EXIT_IOERR = 74  # EX_IOERR: the envelope could not be written to stdout, a D8 transport fault

class EnvironmentFault(Exception):
    """A required module cannot be imported and nothing has been executed: exit 78."""


def split_machine(argv: list[str]) -> tuple[bool, list[str]]:
    """Remove every `--machine` that stands before a `--`; machine mode is never inferred."""
    machine, rest = False, []
    for index, arg in enumerate(argv):
        if arg == "--":
            rest.extend(argv[index:])
            break
        if arg == "--machine":
            machine = True
        else:
            rest.append(arg)
    return machine, rest


def protect_stdout() -> IO[str]:
    """Keep the real stdout for the one envelope; anything else written to fd 1 goes to stderr.

    The envelope descriptor is a private duplicate (not inherited by children); fd 1 itself is
    pointed at stderr, so a stray print, `os.write(1, ...)` or a child process cannot reach it.
    Raises OSError when fd 1 is closed: no envelope can reach anyone, so nothing is done.
    """
    if sys.stdout is not None:  # None when the interpreter started with fd 1 closed
        sys.stdout.flush()
    envelope_fd = os.dup(1)
    try:
        os.dup2(2, 1)
    except OSError:  # no stderr either: stray output is discarded rather than mixed in
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    sys.stdout = sys.stderr
    return os.fdopen(envelope_fd, "w", encoding="utf-8", closefd=True)


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


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    machine, args = split_machine(args)
    missing = missing_required()
    if missing is not None:
        return diagnose(f"{missing} (no such module)")
    try:
        out = protect_stdout() if machine else sys.stdout
    except OSError as exc:  # fd 1 closed (`li ... --machine >&-`): answer nothing, run nothing
        return transport_fault(f"stdout is closed, so no envelope can be written ({exc.strerror or exc})")
    if out is None:  # fd 1 closed in human mode (`li job list >&-`): nothing could be shown
        return transport_fault("stdout is closed, so nothing can be written")
    try:
        from entrypoints.dispatch import dispatch

        return dispatch(args, machine=machine, out=out)
    except EnvironmentFault as exc:
        return diagnose(exc)
    except ImportError as exc:
        return diagnose(exc)


if __name__ == "__main__":
    sys.exit(main())
