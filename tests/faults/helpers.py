"""What every fault test asks of every verb: a true answer, the same from each verb, and no bystander hurt."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from dataclasses import dataclass
from typing import Any

from tests.support import machine

NEVER = 30.0  # seconds a test will wait for something that must happen; far above what it needs


def submit(home: str, command: str, env: dict[str, str] | None = None, *extra: str) -> str:
    """`li agent --detach sh COMMAND`; returns the run id."""
    result = machine("agent", "--detach", *extra, "sh", command, home=home, env=env)
    return str(result.data["run_id"])


def marker(home: str, phase: str, timeout: float = NEVER) -> int:
    """The pid that paused at `phase` (adapters/faults.py writes it), once it is there."""
    path = os.path.join(home, f"{phase}.pid")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path):
            with open(path, encoding="ascii") as handle:
                return int(handle.read())
        time.sleep(0.05)
    raise AssertionError(f"nothing paused at {phase} within {timeout}s")


def sigkill(pid: int) -> None:
    """SIGKILL one process and wait until it is no longer running (a zombie counts as gone)."""
    import psutil

    try:
        os.kill(pid, signal.SIGKILL)
        psutil.Process(pid).wait(timeout=NEVER)
    except (ProcessLookupError, psutil.NoSuchProcess):
        pass


def kill_group(pgid: int | None) -> None:
    if pgid:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


def record(home: str, run_id: str) -> dict[str, Any]:
    with open(os.path.join(home, "runs", run_id, "record.json"), encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


def raw_record(home: str, run_id: str) -> bytes:
    with open(os.path.join(home, "runs", run_id, "record.json"), "rb") as handle:
        return handle.read()


@dataclass
class Answers:
    """What status, wait, list and output say about one run at (nearly) one moment."""

    status: dict[str, Any]
    wait: dict[str, Any]
    wait_entry: dict[str, Any]
    row: dict[str, Any] | None
    output: dict[str, Any]


def ask(home: str, run_id: str) -> Answers:
    status = machine("job", "status", run_id, home=home).envelope
    wait = machine("job", "wait", run_id, "--max-wait", "0", home=home).envelope
    listing = machine("job", "list", "--limit", "1000", home=home).envelope
    output = machine("job", "output", run_id, home=home).envelope
    assert wait["ok"] and listing["ok"], (wait, listing)
    row = next((r for r in listing["data"]["runs"] if r["run_id"] == run_id), None)
    return Answers(status, wait, wait["data"]["runs"][0], row, output)


def wait_until_ended(home: str, run_id: str, timeout: float = NEVER) -> dict[str, Any]:
    """Bounded waits until the run is terminal; returns its status data."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        machine("job", "wait", run_id, "--max-wait", "5", "--poll-interval", "0.1", home=home)
        data = machine("job", "status", run_id, home=home).envelope["data"]
        if data and data["terminal"]:
            return dict(data)
    raise AssertionError(f"{run_id} did not end within {timeout}s")


def assert_truthful(answers: Answers, *, work_completed: bool, record_end: bool) -> None:
    """Never a false terminal, never a false success, every verb saying the same thing.

    `work_completed`: whether the work provably ran to completion (only then may anything say
    succeeded); `record_end`: whether an end is (or may lawfully become) recorded, by the runner
    or by a conclusive reap — without one, nothing may say terminal.
    """
    data = answers.status["data"]
    assert answers.status["ok"], answers.status
    for view in (data, answers.wait_entry, answers.row):
        assert view is not None, "the run is missing from `li job list`"
        assert (view["status"], view["terminal"], view["outcome"]) == (
            data["status"], data["terminal"], data["outcome"]), (view, data)
        assert view["outcome"] is None or view["terminal"], view
    if data["terminal"]:
        assert record_end, f"a false terminal: {data}"
    if data["outcome"] == "succeeded":
        assert work_completed, f"a false success: {data}"
    bucket = [b for b in ("pending", "stopped_without_end", "unresolved_spawn")
              if data["run_id"] in answers.wait["data"][b]]
    assert len(bucket) == (0 if data["terminal"] else 1), (bucket, answers.wait["data"])
    assert answers.wait["data"]["all_terminal"] is data["terminal"]
    assert_output_is_available_or_says_why(answers.output)


def assert_output_is_available_or_says_why(envelope: dict[str, Any]) -> None:
    """D7: every read-derived field is a value or an explicit unavailability, never a bare null/[]."""
    assert envelope["ok"], envelope
    for name in ("console", "artifacts", "manifest"):
        field = envelope["data"][name]
        if field["available"]:
            assert field["value"] is not None and field["reason_code"] is None, (name, field)
        else:
            assert field["value"] is None and field["reason_code"], (name, field)


def bystander(home: str) -> str:
    """A run that completes normally before the fault; afterwards it must read exactly the same."""
    run_id = submit(home, 'echo bystander > "$LI_ARTIFACTS_DIR/b.txt"')
    data = wait_until_ended(home, run_id)
    assert (data["status"], data["outcome"]) == ("completed", "succeeded"), data
    return run_id


def assert_undisturbed(home: str, run_id: str, before: bytes) -> None:
    assert raw_record(home, run_id) == before, "a bystander's record changed"
    data = machine("job", "status", run_id, home=home).data
    assert (data["status"], data["terminal"], data["outcome"]) == ("completed", True, "succeeded")
