"""The `li` console script. Standard library only until the import guard is in place (D8)."""

from __future__ import annotations

import os
import sys

# Modules a run needs. A broken installation is diagnosed by exit 78 before any run exists.
REQUIRED_MODULES = ("pydantic", "psutil", "filelock", "dependency_injector", "yaml")


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


def protect_stdout() -> object:
    """Reserve the real stdout for the one envelope; anything else written to fd 1 goes to stderr."""
    sys.stdout.flush()
    envelope_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(envelope_fd, "w", encoding="utf-8", closefd=True)


def missing_required() -> str | None:
    from importlib.util import find_spec

    for name in REQUIRED_MODULES:
        try:
            if find_spec(name) is None:
                return name
        except (ImportError, ValueError):
            return name
    return None


def diagnose(exc: BaseException | str) -> int:
    print(f"li: environment fault: required module not importable: {exc}", file=sys.stderr)
    return 78


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    machine, args = split_machine(args)
    missing = missing_required()
    if missing is not None:
        return diagnose(missing)
    out = protect_stdout() if machine else sys.stdout
    try:
        from entrypoints.dispatch import dispatch

        return dispatch(args, machine=machine, out=out)
    except EnvironmentFault as exc:
        return diagnose(exc)
    except ImportError as exc:
        return diagnose(exc)


if __name__ == "__main__":
    sys.exit(main())
