"""The machine dispatcher: every request that reaches it gets exactly one envelope (D3)."""

from __future__ import annotations

import errno
import sys
from collections.abc import Callable

from lionrun.domain.contract import (
    IMPLEMENTATION,
    ContractError,
    ErrorKind,
    failure,
    success,
)
from lionrun.entrypoints.environment import (
    PRE_IMPORTS,
    EnvironmentFault,
    import_required,
    silence,
    transport_fault,
)
from lionrun.entrypoints.startup.fast_path import without_parser
from lionrun.entrypoints.usage import HelpRequested, UsageError
from lionrun.entrypoints.version import version

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: a handshake never loads it
if TYPE_CHECKING:
    from argparse import Namespace
    from typing import IO, Any

    from lionrun.entrypoints.cli import Parser
    from lionrun.entrypoints.verbs._common import Verb

# Errors of a write that did not reach stdout: a full device, a closed or failing descriptor.
UNWRITABLE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EBADF, errno.EIO})
# Human-mode exit codes for refusals; under --machine every envelope exits 0 (D8).
HUMAN_EXIT = {"invalid_input": 2, "not_found": 3, "conflict": 4, "unavailable": 5, "internal": 70}
# Commands that may allocate a run: their dependencies are imported before they start, so an
# import failure inside them is never reported as exit 78 once a run might exist (D8).
ALLOCATING_COMMANDS = frozenset(PRE_IMPORTS)



# Unicode line breaks JSON leaves raw inside strings; only strings can hold them, so escaping is exact.
LINE_BREAKERS = (("\x85", "\\u0085"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


class LateImportError(RuntimeError):
    """An import failed after the request began work: an internal error, never exit 78."""


class EnvelopeNotWritten(Exception):
    """stdout refused the envelope (a full disk, a reader that left, a descriptor not open for writing)."""


def emit(envelope: dict[str, Any], out: IO[str]) -> None:
    """Write the one envelope; lone surrogates from undecodable argv never reach the wire.

    Raises EnvelopeNotWritten when stdout refuses it: the caller then has no envelope, and the
    exit status must say so (74), never 0. json is imported here: a human-mode call (`li --help`)
    writes no envelope.
    """
    import json

    try:
        text = json.dumps(envelope, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        text = json.dumps(failure(ErrorKind.INTERNAL, f"the answer could not be encoded: {error}"))
    # Characters some line readers split on are escaped, so the envelope is always one line.
    for separator, escape in LINE_BREAKERS:
        text = text.replace(separator, escape)
    try:
        out.buffer.write((text + "\n").encode("utf-8", errors="replace"))  # type: ignore[attr-defined]
        out.flush()
    except (OSError, ValueError) as error:  # ENOSPC, EPIPE, EBADF; ValueError: a closed stream
        silence(out)  # what is still buffered goes nowhere, so the final flush cannot fail loudly
        raise EnvelopeNotWritten(f"the envelope could not be written to stdout: {error}") from error


def parser(args: list[str] | None = None) -> Parser:
    """The argument parser for these words (entrypoints/cli.py), imported when first needed."""
    from lionrun.entrypoints.cli import build_parser

    return build_parser(args)


def parse(args: list[str]) -> Namespace:
    """The request's namespace: the parser's, or for words answered without one
    (entrypoints/startup/fast_path.py) the one it would give."""
    namespace = without_parser(args)
    if namespace is not None:
        return namespace
    return parser(args).parse_args(args)


def invoke(namespace: Namespace, method: Callable[[Namespace], Any]) -> Any:
    """Call a verb; an ImportError is an environment fault only while nothing can have run."""
    command = getattr(namespace, "command", None)
    if command not in ALLOCATING_COMMANDS:
        try:
            return method(namespace)
        except ImportError as error:
            raise EnvironmentFault(str(error)) from error
    import_required(PRE_IMPORTS[command])  # may raise EnvironmentFault: nothing has been executed yet
    try:
        return method(namespace)
    except ImportError as error:
        raise LateImportError(f"an import failed after the request began: {error}") from error


def answer(args: list[str]) -> dict[str, Any]:
    """Parse and run one request, returning its envelope; only an EnvironmentFault escapes."""
    try:
        namespace = parse(args)
        if namespace.version:
            return success({"version": version(), "implementation": IMPLEMENTATION})
        verb: Verb | None = getattr(namespace, "verb", None)
        if verb is None:
            raise UsageError("no command given; try `li --help`", parser().format_usage())
        refuse_home(namespace)
        admit_acting(namespace)
        data = invoke(namespace, verb.run)
        if not isinstance(data, dict):
            raise TypeError(f"{namespace.command} answered {type(data).__name__}, not an object")
        return success(data)
    except HelpRequested as request:
        return success({"help": request.text})
    except UsageError as error:
        return failure(ErrorKind.INVALID_INPUT, error.message.strip(), {"usage": error.usage.strip()})
    except ContractError as error:
        message = home_said(error.message) if error.kind is ErrorKind.UNAVAILABLE else error.message
        return failure(error.kind, message, error.detail)
    except EnvironmentFault:
        raise
    except ImportError as error:
        raise EnvironmentFault(str(error)) from error
    except KeyboardInterrupt:
        return failure(ErrorKind.INTERNAL, "interrupted before an answer was established")
    except (Exception, SystemExit) as error:  # noqa: BLE001 - the envelope is the contract, even for our bugs
        if store_fault(error):
            return failure(ErrorKind.UNAVAILABLE, home_said(str(error)), {"reason_code": "store_refused"})
        print(f"li: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        return failure(ErrorKind.INTERNAL, f"{type(error).__name__}: {error}")


# Verbs that never touch the store: a bad LI_HOME does not stop them.
WITHOUT_STORE = frozenset({"handshake", "completion", "mcp"})


def refuse_home(namespace: Any) -> None:
    """A relative LI_HOME is refused before any verb that uses the store runs."""
    if getattr(namespace, "command", None) in WITHOUT_STORE:
        return
    from lionrun.entrypoints.settings import home_refusal

    problem = home_refusal()
    if problem is not None:
        raise ContractError(ErrorKind.UNAVAILABLE, problem, {"reason_code": "store_refused"})


def home_said(message: str) -> str:
    """A store fault's message, led by what is wrong with LI_HOME when that is the cause."""
    from lionrun.entrypoints.settings import home_refusal

    problem = home_refusal(check_folder=True)
    return f"{problem} ({message})" if problem is not None and problem not in message else message


def store_fault(error: BaseException) -> bool:
    """The store itself could not be used (LI_HOME a file, unreadable, refusing): an environment
    fault for every verb, `unavailable`, never `internal` or `not_found`."""
    from lionrun.application.ports import StoreRefused

    return isinstance(error, StoreRefused)


def dispatch(args: list[str], *, machine: bool, out: IO[str]) -> int:
    """Answer one request: one envelope and exit 0 under --machine, readable text otherwise.

    An envelope stdout refused is a transport fault (D8): exit 74 and one line on stderr.
    """
    if machine:
        try:
            envelope = answer(args)
            emit(envelope, out)
        except EnvelopeNotWritten as error:
            return transport_fault(str(error))
        if envelope.get("ok") or (envelope.get("error") or {}).get("kind") != "unavailable":
            after_answer()
        return 0
    code = human(args, out)
    if code != HUMAN_EXIT["unavailable"]:
        after_answer()
    return code


def after_answer() -> None:
    """Once the answer is given, and the store answered: what a gone runner left in this host's
    spool goes into a shared store (nothing to do, and nothing imported, otherwise)."""
    root = sys.modules.get("lionrun.entrypoints.container")  # never imported here: a handshake stays light
    if root is not None and getattr(root, "_container", None) is not None:
        root.sweep_spool()


def admit_acting(namespace: Namespace) -> None:
    """An li a run's broker runs for its confined work takes only what that work may ask
    (entrypoints/acting.py); any other li takes everything (one look at the environment)."""
    import os

    if os.environ.get("LI_ACTING_FOR"):
        from lionrun.entrypoints.acting import admit

        admit(namespace)


def refuse(message: str, code: int) -> int:
    """A person gets one line on stderr and a non-zero exit, never a traceback."""
    print("li: " + " ".join(message.split()), file=sys.stderr)
    return code


def human(args: list[str], out: IO[str]) -> int:
    """Human mode; a reader that went away (`li job list | head -1`) ends it quietly, like `cat`."""
    try:
        code = _human(args, out)
        out.flush()
        return code
    except BrokenPipeError:
        silence(out)
        return 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader left
    except OSError as error:  # stdout refused the text (a full device, a closed descriptor)
        silence(out)
        return transport_fault(f"the output could not be written to stdout: {error.strerror or error}")


def _human(args: list[str], out: IO[str]) -> int:
    """Human mode: readable text on stdout, one line on stderr and a non-zero exit for refusals."""
    try:
        namespace = parse(args)
    except HelpRequested as request:
        out.write(request.text)
        return 0
    except UsageError as error:
        return refuse(f"invalid_input: {error.message.strip()}", 2)
    namespace.for_person = True  # a person may name runs by short forms (`run_id_arg`)
    verb: Verb | None = getattr(namespace, "verb", None)
    if namespace.version:
        out.write(f"li {version()}\n")
        return 0
    if verb is None:  # bare `li`: the help, as for `li --help`
        tree = getattr(namespace, "tree", None)
        if tree is None:
            return refuse("invalid_input: no command given; try `li --help`", 2)
        out.write(tree.format_help())
        return 0
    try:
        refuse_home(namespace)
        admit_acting(namespace)
        return int(invoke(namespace, verb.human))
    except ContractError as error:
        message = home_said(error.message) if error.kind is ErrorKind.UNAVAILABLE else error.message
        return refuse(f"{error.kind.value}: {message}", HUMAN_EXIT[error.kind.value])
    except EnvironmentFault:
        raise
    except KeyboardInterrupt:
        return refuse("interrupted", 130)
    except BrokenPipeError:
        raise
    except OSError as error:
        if error.errno in UNWRITABLE:
            raise  # the text could not be written: human() says so once and exits 74
        return refuse(f"internal error: {type(error).__name__}: {error}", 70)
    except Exception as error:  # noqa: BLE001 - a person gets one line, never a traceback
        if store_fault(error):
            return refuse(f"unavailable: {home_said(str(error))}", HUMAN_EXIT["unavailable"])
        return refuse(f"internal error: {type(error).__name__}: {error}", 70)
