"""The envelope, classified (D2, D3, D8): exit status first, then the version, then the shape.

The exit rule, word for word as docs/wire-contract.md (its exit table and reference loop) and
docs/consumer-client.md state it (tests/contract/test_exit_rule.py holds the three equal and
runs the reference loop's rules and `classify` against every exit li can give):
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from lionrun.adapters.contract_client.transport import Completed
from lionrun.domain.contract import EXIT_CONFIG, EXIT_IOERR, is_well_formed

EXIT_RULE = """\
1. li could not be started, or your own timeout stopped it: transport fault; stdout is not read.
2. Exit 78: environment fault (li's installation is broken; nothing ran); stdout is not read.
3. Exit 74: transport fault (stdout refused the envelope; a submit may have started a run); stdout is not read.
4. Any other exit: read stdout. Not exactly one JSON object: transport fault. One JSON object: it is the answer, whatever the exit status (li writes it with exit 0); check its version, then its shape.
"""
__doc__ = f"{__doc__}\n{EXIT_RULE}"


class Verdict(StrEnum):
    """The client's classification of one call; only `ok` carries decoded data."""

    OK = "ok"  # a valid envelope we understand, ok: true
    REFUSED = "refused"  # a valid envelope, ok: false; error.kind is from the closed set
    DEGRADED = "degraded"  # the surface speaks a contract version we do not understand
    UNREGISTERED = "unregistered"  # no successful handshake yet: verbs are not available
    CONTRACT_VIOLATION = "contract_violation"  # JSON that is not a well-formed envelope
    ENVIRONMENT_FAULT = "environment_fault"  # exit 78: the li installation is broken
    TRANSPORT_FAULT = "transport_fault"  # no valid envelope: launch, signal, timeout, bad stdout


#: Verdicts that say nothing about any run: never attribute them to the submitted work.
SURFACE_FAULTS = frozenset(
    {
        Verdict.DEGRADED,
        Verdict.UNREGISTERED,
        Verdict.CONTRACT_VIOLATION,
        Verdict.ENVIRONMENT_FAULT,
        Verdict.TRANSPORT_FAULT,
    }
)


@dataclass(frozen=True)
class Reply:
    """One classified answer: `data` only when the verdict is `ok`, `error` only when refused."""

    verdict: Verdict
    data: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    contract_version: int | None = None
    exit_code: int | None = None
    diagnostic: str | None = None
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return self.verdict is Verdict.OK

    def to_wire(self) -> dict[str, Any]:
        """The classification as plain JSON-able data (data and error are carried beside it)."""
        return {
            "surface": self.verdict.value,
            "surface_fault": self.verdict in SURFACE_FAULTS,
            "contract_version": self.contract_version,
            "exit_code": self.exit_code,
            "diagnostic": self.diagnostic,
        }


def classify(done: Completed, understood: frozenset[int]) -> Reply:
    """Turn one invocation into a Reply: exit status first, then the version, then the shape."""
    fault = _transport_fault(done)
    if fault is not None:
        return fault
    parsed = parse_one_object(done.stdout, "stdout")
    if isinstance(parsed, str):
        return _fault(Verdict.TRANSPORT_FAULT, done, f"{_exit_words(done.exit_code)}; {parsed}")
    return _judge_envelope(parsed, done, understood)


def _transport_fault(done: Completed) -> Reply | None:
    """Answers decided by the exit status alone (rules 1-3); stdout is never parsed for these (C6)."""
    if done.launch_error is not None:
        return _fault(
            Verdict.TRANSPORT_FAULT, done, f"li could not be launched: {done.launch_error}"
        )
    if done.timed_out:
        return _fault(Verdict.TRANSPORT_FAULT, done, "li did not answer within the client's bound")
    if done.exit_code == EXIT_CONFIG:
        return _fault(
            Verdict.ENVIRONMENT_FAULT,
            done,
            "li exited 78: its installation is broken; no run was created",
        )
    if done.exit_code == EXIT_IOERR:
        return _fault(
            Verdict.TRANSPORT_FAULT,
            done,
            "li exited 74: its stdout refused the envelope (a submit may have started a run: "
            "submit again with the same idempotency key)",
        )
    return None


def parse_one_object(text: str, what: str) -> dict[str, Any] | str:
    """Exactly one JSON object, or a reason why not (a string naming `what` was read)."""
    if not text.strip():
        return f"{what} was empty"
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested deeper than json can go
        return f"{what} is not one JSON value ({type(exc).__name__}: {exc})"
    if not isinstance(value, dict):
        return f"{what} is JSON but not an object ({type(value).__name__})"
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"non-JSON constant {name}")


def _judge_envelope(envelope: dict[str, Any], done: Completed, understood: frozenset[int]) -> Reply:
    """Check the version before anything else is looked at, then the D3 shape."""
    version = envelope.get("contract_version")
    if not isinstance(version, int) or isinstance(version, bool):
        return _fault(
            Verdict.CONTRACT_VIOLATION, done, "envelope carries no integer contract_version"
        )
    if version not in understood:
        words = f"envelope speaks contract_version {version}; this client understands {sorted(understood)}"
        return _fault(Verdict.DEGRADED, done, words, version)
    problem = _shape_problem(envelope)
    if problem is not None:
        return _fault(Verdict.CONTRACT_VIOLATION, done, problem, version)
    if envelope["ok"]:
        return Reply(Verdict.OK, envelope["data"], None, version, done.exit_code, None, done.stderr)
    return Reply(
        Verdict.REFUSED, None, envelope["error"], version, done.exit_code, None, done.stderr
    )


def _shape_problem(envelope: dict[str, Any]) -> str | None:
    """Why an envelope of an understood version is malformed, or None (unknown keys are fine).

    The D3 rule is the domain's `is_well_formed`; the client adds only that `data` is an
    object, because it reads every v1 data as one.
    """
    if is_well_formed(envelope) and (not envelope["ok"] or isinstance(envelope["data"], dict)):
        return None
    return _diagnose_shape(envelope)


def _diagnose_shape(envelope: dict[str, Any]) -> str:
    """Words for a malformed envelope: the first D3 rule it breaks (wording only, no decision)."""
    ok, data, error = envelope.get("ok"), envelope.get("data"), envelope.get("error")
    if not isinstance(ok, bool):
        return "envelope has no boolean ok"
    if (data is None) == (error is None):
        return "envelope must carry exactly one of data and error"
    if ok:
        return "ok: true must carry a data object"
    if not isinstance(error, dict):
        return "ok: false must carry an error object"
    return f"error.kind {error.get('kind')!r} is outside the closed set"


def _fault(verdict: Verdict, done: Completed, words: str, version: int | None = None) -> Reply:
    return Reply(verdict, None, None, version, done.exit_code, words, done.stderr)


def _exit_words(code: int | None) -> str:
    if code is not None and code < 0:
        return f"li was killed by signal {-code}"
    return f"li exited {code}"
