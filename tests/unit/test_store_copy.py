"""`li store copy` as a use case over fakes: whole runs or nothing, idempotent, resumable."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pytest

from lionrun.adapters.memory_store import MemoryRunStore
from lionrun.application.ports import ImportedArtifact, StoreRefused
from lionrun.application.store_copy import NOT_ENDED, copy_runs
from lionrun.domain.run import STARTED, Run


class FakeTarget:
    """Holds imported runs whole; `fail_at` makes that import (1-based) refuse, writing nothing."""

    artifact_body_max = 8

    def __init__(self, fail_at: int | None = None) -> None:
        self.runs: dict[str, tuple[Run, dict[str, str], bytes | None, list[ImportedArtifact] | None]] = {}
        self.li_logs: dict[str, bytes | None] = {}
        self.calls = 0
        self.fail_at = fail_at

    def import_run(self, run: Run, files: Mapping[str, str], console: Iterable[bytes] | None,
                   artifacts: Sequence[ImportedArtifact] | None, li_log: Iterable[bytes] | None = None) -> bool:
        self.calls += 1
        console_bytes = None if console is None else b"".join(console)  # read before anything is kept
        li_log_bytes = None if li_log is None else b"".join(li_log)
        if self.calls == self.fail_at:
            raise StoreRefused("the server went away")
        if run.run_id in self.runs:
            return False
        self.runs[run.run_id] = (run, dict(files), console_bytes, None if artifacts is None else list(artifacts))
        self.li_logs[run.run_id] = li_log_bytes
        return True


def add(store: MemoryRunStore, n: int, ended: bool = True) -> str:
    run_id = f"20260101T00000{n}-abcdef"
    run = Run(run_id=run_id, kind="agent", status="completed" if ended else "running", spawn_state=STARTED,
              submitted_at="2026-01-01T00:00:00Z", finished_at="2026-01-01T00:01:00Z" if ended else None,
              outcome="succeeded" if ended else None, host_id="host-z")
    store.put_raw(run_id, json.dumps(run.evolve(generation=7).to_dict()))
    store.write_text(run_id, "instruction.txt", f"do {n}")
    return run_id


def test_runs_are_copied_whole_and_a_second_copy_copies_nothing() -> None:
    source, target = MemoryRunStore(), FakeTarget()
    first = add(source, 1)
    source.append_console(first, "hello\n")
    source.append_li_log(first, "li runner: completed\n")
    source.put_artifact(first, "small.txt", b"data")
    source.put_artifact(first, "big.bin", b"x" * 9)
    add(source, 2)
    add(source, 3)
    outcome = copy_runs(source, target)
    assert (outcome.copied, outcome.already_there, outcome.skipped) == (3, 0, 0)
    run, files, console, artifacts = target.runs[first]
    assert (run.generation, run.host_id, run.finished_at) == (7, "host-z", "2026-01-01T00:01:00Z")
    assert files == {"instruction.txt": "do 1"} and console == b"hello\n"
    assert target.li_logs[first] == b"li runner: completed\n"  # li's lines come along, still apart
    assert target.li_logs["20260101T000002-abcdef"] is None  # a run with no li log gets none
    bodies = {str(a.entry["name"]): (a.body, a.entry.get("available")) for a in artifacts or []}
    assert bodies == {"small.txt": (b"data", None), "big.bin": (None, False)}
    again = copy_runs(source, target)
    assert (again.copied, again.already_there, again.skipped) == (0, 3, 0)


def test_a_live_run_and_an_unreadable_record_are_skipped_and_named() -> None:
    source, target = MemoryRunStore(), FakeTarget()
    add(source, 1)
    live = add(source, 2, ended=False)
    broken = "20260101T000003-abcdef"
    source.put_raw(broken, "{not json")
    outcome = copy_runs(source, target)
    assert (outcome.copied, outcome.skipped) == (1, 2)
    reasons: dict[str, Any] = {s.run_id: s.reason_code for s in outcome.skipped_runs}
    assert reasons[live] == NOT_ENDED and reasons[broken] == "malformed"
    assert live not in target.runs and broken not in target.runs


def test_an_interrupted_copy_leaves_the_first_run_whole_and_a_rerun_completes() -> None:
    source, target = MemoryRunStore(), FakeTarget(fail_at=2)
    ids = sorted((add(source, n) for n in (1, 2, 3)), reverse=True)  # the copy goes newest first
    with pytest.raises(StoreRefused):
        copy_runs(source, target)
    assert list(target.runs) == [ids[0]] and target.runs[ids[0]][1] == {"instruction.txt": "do 3"}
    outcome = copy_runs(source, target)
    assert (outcome.copied, outcome.already_there) == (2, 1)
    assert set(target.runs) == set(ids)


def test_a_console_that_fails_mid_copy_skips_that_run_and_keeps_nothing_of_it() -> None:
    source, target = MemoryRunStore(), FakeTarget()
    run_id = add(source, 1)
    source.append_console(run_id, "x" * 200_000)
    real = source.console_bytes
    calls = []

    def failing(rid: str, offset: int, limit: int) -> tuple[bytes, int]:
        calls.append(offset)
        if offset > 0:
            raise OSError("console.log was replaced")
        return real(rid, offset, limit)

    source.console_bytes = failing  # type: ignore[method-assign]
    outcome = copy_runs(source, target)
    assert (outcome.copied, outcome.skipped) == (0, 1) and outcome.skipped_runs[0].reason_code == "unreadable"
    assert target.runs == {} and len(calls) >= 3  # read a chunk at a time, never all at once
