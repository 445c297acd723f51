"""`li job status|list` against real detached processes: liveness is advisory, a recorded end is authority."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lionrun.adapters.fs_store import FsRunStore
from tests.builders import RunState, Sleeper, a_run, end
from tests.support import machine


@pytest.fixture
def sleeper() -> Iterator[Sleeper]:
    process = Sleeper()
    yield process
    process.stop()


def now() -> datetime:
    return datetime.now(UTC)


def status(run_id: str, home: str) -> dict:
    return machine("job", "status", run_id, home=home).data


def test_a_live_run_reads_running_and_alive(li_home: str, sleeper: Sleeper) -> None:
    store = FsRunStore(li_home)
    run = a_run(store, now(), RunState.STARTED, pid=sleeper.pid, incarnation=sleeper.incarnation())
    data = status(run.run_id, li_home)
    assert (data["status"], data["terminal"], data["outcome"], data["alive"], data["pid"]) == (
        "running", False, None, True, sleeper.pid)
    assert data["possibly_orphaned"] is False


def test_a_sigkilled_run_without_a_recorded_identity_reads_exited_and_possibly_orphaned(
        li_home: str, sleeper: Sleeper) -> None:
    store = FsRunStore(li_home)
    run = a_run(store, now(), RunState.STARTED, pid=sleeper.pid)  # written before incarnations were recorded
    sleeper.kill_group(signal.SIGKILL)
    assert sleeper.gone() == -signal.SIGKILL
    for _ in range(2):  # inconclusive evidence: nothing reaps it, every read says the same
        data = status(run.run_id, li_home)
        assert (data["status"], data["terminal"], data["outcome"], data["alive"], data["possibly_orphaned"]) == (
            "exited", False, None, False, True)
    row = machine("job", "list", home=li_home).data["runs"][0]
    assert (row["status"], row["terminal"], row["outcome"], row["possibly_orphaned"]) == (
        "exited", False, None, True)
    assert store.read(run.run_id).finished_at is None


def test_a_sigkilled_run_with_its_incarnation_recorded_is_reaped_by_the_first_read(
        li_home: str, sleeper: Sleeper) -> None:
    store = FsRunStore(li_home)
    run = a_run(store, now(), RunState.STARTED, pid=sleeper.pid, incarnation=sleeper.incarnation())
    sleeper.kill_group(signal.SIGKILL)
    sleeper.gone()
    data = status(run.run_id, li_home)
    assert (data["status"], data["terminal"], data["outcome"], data["alive"]) == (
        "exited", True, "indeterminate", False)
    assert data["reason_code"] == "process_gone_without_outcome"
    assert store.read(run.run_id).terminal_source == "reaper"


def test_a_pid_reused_by_another_process_is_never_reported_alive(li_home: str, sleeper: Sleeper) -> None:
    store = FsRunStore(li_home)
    ours = sleeper.incarnation(create_time_shift=-300.0)  # the recorded process started five minutes earlier
    run = a_run(store, now(), RunState.STARTED, pid=sleeper.pid, incarnation=ours)
    data = status(run.run_id, li_home)
    assert data["alive"] is False
    assert data["status"] == "exited" and data["reason_code"] == "process_gone_pid_recycled"
    assert os.path.exists(f"/proc/{sleeper.pid}")  # the other process is untouched


@pytest.mark.parametrize("shift", [0.0, -300.0])
def test_a_completed_run_whose_pid_belongs_to_a_live_process_still_reads_succeeded(
        li_home: str, sleeper: Sleeper, shift: float) -> None:
    store = FsRunStore(li_home)
    run = a_run(store, now(), RunState.STARTED, pid=sleeper.pid, incarnation=sleeper.incarnation(create_time_shift=shift))
    end(store, run.run_id, "completed", "succeeded")
    before = Path(store.run_dir(run.run_id), "record.json").read_text()
    data = status(run.run_id, li_home)
    assert (data["status"], data["terminal"], data["outcome"]) == ("completed", True, "succeeded")
    assert data["alive"] is (shift == 0.0)  # advisory only; a different create time is not ours
    after = Path(store.run_dir(run.run_id), "record.json").read_text()
    assert json.loads(after) == json.loads(before)


def test_a_preparing_record_stays_non_terminal_however_old(li_home: str) -> None:
    store = FsRunStore(li_home)
    run = a_run(store, datetime(2026, 1, 1, tzinfo=UTC), RunState.PREPARING)
    data = status(run.run_id, li_home)
    assert (data["terminal"], data["outcome"], data["possibly_orphaned"], data["spawn_state"]) == (
        False, None, True, "preparing")
    assert data["age_seconds"] > 600
