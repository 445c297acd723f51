"""The `li` console script. Standard library only until the import guard is in place (D8)."""

from __future__ import annotations

import os
import sys

from lionrun.entrypoints.environment import (
    EnvironmentFault,
    diagnose,
    missing_required,
    transport_fault,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import IO


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


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    code = brokered(args)
    if code is not None:
        return code
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
        from lionrun.entrypoints.dispatch import dispatch

        return dispatch(args, machine=machine, out=out)
    except EnvironmentFault as exc:
        return diagnose(exc)
    except ImportError as exc:
        return diagnose(exc)


def brokered(args: list[str]) -> int | None:
    """In a run's confined work the store is hidden: the run's head answers this request for it
    (adapters/broker.py), with this process's descriptors; its exit status. None elsewhere, or
    when no head acts (said on stderr): the request then gets the answer it would without one."""
    from lionrun.entrypoints.home import broker_of_hidden_home

    name = broker_of_hidden_home()
    if name is None:
        return None
    from lionrun.adapters.broker import forward

    code, why = forward(name, args)
    if code is None:
        print(f"li: {why}", file=sys.stderr)
    return code


def console() -> None:
    """The `li` console script: `main`, then out without tearing the interpreter down
    (entrypoints/startup/quick_exit.py)."""
    from lionrun.entrypoints.startup.quick_exit import leave

    leave(main())


if __name__ == "__main__":
    console()
