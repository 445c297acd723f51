"""Hand-written `li` answers for the contract client: a scripted runner, envelopes, a fake clock."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lionrun.adapters.contract_client import Completed

LI = "/opt/lionrun/bin/li"
RUN_ID = "20260725T175010-97f334"
OTHER_ID = "20260725T175011-0a0b0c"


def envelope(data: object = None, *, version: object = 1, **overrides: Any) -> str:
    """The JSON text of an envelope: ok with `data` unless overridden."""
    body: dict[str, Any] = {"ok": True, "contract_version": version, "data": data, "error": None}
    body.update(overrides)
    return json.dumps(body)


def refusal(kind: str = "not_found", message: str = "no job with that id", version: int = 1) -> str:
    error = {"kind": kind, "message": message, "detail": None}
    return json.dumps({"ok": False, "contract_version": version, "data": None, "error": error})


def handshake_data(version: int = 1) -> dict[str, Any]:
    return {
        "contract_version": version,
        "min_supported_version": 1,
        "implementation": "lionrun",
        "implementation_version": "0.1.0",
        "module": "/abs/entrypoints",
    }


def run_row(
    status: str = "running",
    terminal: bool | None = False,
    outcome: str | None = None,
    run_id: str = RUN_ID,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "kind": "agent",
        "label": None,
        "status": status,
        "terminal": terminal,
        "outcome": outcome,
        "reason_code": None,
        **extra,
    }


def wait_data(
    rows: Sequence[dict[str, Any]],
    *,
    timed_out: bool = False,
    pending: Sequence[str] = (),
    stopped: Sequence[str] = (),
    unresolved: Sequence[str] = (),
) -> dict[str, Any]:
    entries = [
        {
            "possibly_orphaned": False,
            "spawn_state": "started",
            "submitted_at": None,
            "error": None,
            **row,
        }
        for row in rows
    ]
    return {
        "runs": entries,
        "all_terminal": all(r.get("terminal") for r in rows) and not stopped,
        "timed_out": timed_out,
        "pending": list(pending),
        "stopped_without_end": list(stopped),
        "unresolved_spawn": list(unresolved),
        "unresolved_spawn_after": 600.0,
        "max_wait": 1.0,
        "poll_interval": 0.05,
        "requested_max_wait": 1.0,
        "requested_poll_interval": 0.05,
    }


def ok(data: dict[str, Any]) -> Completed:
    return Completed(0, envelope(data))


@dataclass
class ScriptedRunner:
    """Answers calls from a queue of Completed results and records every argv it was given."""

    answers: list[Completed] = field(default_factory=list)
    calls: list[list[str]] = field(default_factory=list)
    stdins: list[str | None] = field(default_factory=list)
    timeouts: list[float] = field(default_factory=list)

    def __call__(self, argv: Sequence[str], timeout: float, stdin: str | None = None) -> Completed:
        self.calls.append(list(argv))
        self.stdins.append(stdin)
        self.timeouts.append(timeout)
        if not self.answers:
            raise AssertionError(f"unexpected call to li: {list(argv)}")
        return self.answers.pop(0)

    def then(self, *answers: Completed) -> ScriptedRunner:
        self.answers.extend(answers)
        return self


@dataclass
class FakeTime:
    """A monotonic clock that only moves when the client sleeps."""

    now: float = 1000.0
    slept: list[float] = field(default_factory=list)

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
