"""The machine dispatcher: every request that reaches it gets exactly one envelope (D3)."""

from __future__ import annotations

import json
import sys
from argparse import Namespace
from typing import IO, Any

from domain.contract import ContractError, ErrorKind, failure, success
from entrypoints.bootstrap import EnvironmentFault
from entrypoints.cli import VERSION, HelpRequested, UsageError, build_parser

# Human-mode exit codes for refusals; under --machine every envelope exits 0 (D8).
HUMAN_EXIT = {"invalid_input": 2, "not_found": 3, "conflict": 4, "unavailable": 5, "internal": 70}


def emit(envelope: dict[str, Any], out: IO[str]) -> None:
    """Write the one envelope; lone surrogates from undecodable argv never reach the wire."""
    text = json.dumps(envelope, ensure_ascii=False, allow_nan=False) + "\n"
    try:
        out.buffer.write(text.encode("utf-8", errors="replace"))  # type: ignore[attr-defined]
        out.flush()
    except (BrokenPipeError, OSError):
        pass  # the caller went away; nothing else may be written in its place


def answer(args: list[str]) -> tuple[Namespace | None, dict[str, Any]]:
    """Parse and run one request, returning the envelope (never raising, except for D8)."""
    try:
        namespace = build_parser().parse_args(args)
        if namespace.version:
            return namespace, success({"version": VERSION, "implementation": "lionrun"})
        verb = getattr(namespace, "verb", None)
        if verb is None:
            raise UsageError("no command given; try `li --help`")
        return namespace, success(verb.run(namespace))
    except HelpRequested as request:
        return None, success({"help": request.text})
    except UsageError as error:
        return None, failure(ErrorKind.INVALID_INPUT, error.message.strip(), {"usage": error.usage.strip()})
    except ContractError as error:
        return None, failure(error.kind, error.message, error.detail)
    except ImportError as error:
        raise EnvironmentFault(str(error)) from error
    except KeyboardInterrupt:
        return None, failure(ErrorKind.INTERNAL, "interrupted before an answer was established")
    except Exception as error:  # noqa: BLE001 - the envelope is the contract, even for our bugs
        print(f"li: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        return None, failure(ErrorKind.INTERNAL, f"{type(error).__name__}: {error}")


def dispatch(args: list[str], *, machine: bool, out: IO[str]) -> int:
    if machine:
        _, envelope = answer(args)
        emit(envelope, out)
        return 0
    return human(args, out)


def human(args: list[str], out: IO[str]) -> int:
    """Human mode: readable text on stdout, one line on stderr and a non-zero exit for refusals."""
    try:
        namespace = build_parser().parse_args(args)
    except HelpRequested as request:
        out.write(request.text)
        return 0
    except UsageError as error:
        print(f"li: error: {error.message.strip()}", file=sys.stderr)
        print(error.usage.strip(), file=sys.stderr)
        return 2
    verb = getattr(namespace, "verb", None)
    if namespace.version:
        out.write(f"li {VERSION}\n")
        return 0
    if verb is None:
        print("li: error: no command given; try `li --help`", file=sys.stderr)
        return 2
    try:
        if hasattr(verb, "human"):
            return int(verb.human(namespace))
        return int(verb.show(verb.run(namespace), namespace))
    except ContractError as error:
        print(f"li: {error.kind.value}: {error.message}", file=sys.stderr)
        return HUMAN_EXIT[error.kind.value]
    except ImportError as error:
        raise EnvironmentFault(str(error)) from error
    except KeyboardInterrupt:
        print("li: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # noqa: BLE001 - a person gets one line, never a traceback
        print(f"li: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        return 70
