"""`li job kill` against real process groups: it signals its own group, and only its own."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import psutil
import pytest
from msgspec.structs import replace

from lionrun.adapters.fs_store import FsRunStore
from lionrun.domain.run import Run, iso
from tests.builders import RunState, Sleeper, a_run, end, is_gone, kill_session, session_work
from tests.support import (
    envelope_of,
    li_bin,
    machine,
    run_li,
    status_data,
    submit_detached,
    wait_terminal,
)

FAST = {"LI_KILL_GRACE": "0.3"}


@pytest.fixture
def sleepers() -> Iterator[list[Sleeper]]:
    started: list[Sleeper] = []
    yield started
    for process in started:
        process.stop()


def start(sleepers: list[Sleeper], argv: list[str] | None = None, run_id: str | None = None) -> Sleeper:
    process = Sleeper(argv, run_id=run_id)
    sleepers.append(process)
    return process


def tagged(store: FsRunStore, sleepers: list[Sleeper], argv: list[str] | None = None) -> tuple[str, Sleeper]:
    """A run id reserved first, then a process carrying it as li's runner does (LI_RUN_ID)."""
    run_id = store.reserve(datetime.now(UTC))
    return run_id, start(sleepers, argv, run_id)


def started(store: FsRunStore, run_id: str, process: Sleeper) -> Run:
    now = iso(datetime.now(UTC))
    return store.create(Run(run_id, "agent", "running", now, spawn_state="started", started_at=now,
                            pid=process.pid, incarnation=process.incarnation()))


def wait_for(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.02)


def kill(run_id: str, home: str) -> dict:
    return machine("job", "kill", run_id, home=home, env=FAST).data


def test_kill_of_a_live_run_signals_its_group_and_the_process_dies(li_home: str, sleepers) -> None:
    store = FsRunStore(li_home)
    run_id, process = tagged(store, sleepers)
    run = started(store, run_id, process)
    answer = kill(run.run_id, li_home)
    assert answer["action"] == "signalled"
    assert process.gone() == -signal.SIGTERM
    record = store.read(run.run_id)
    assert record.kill_requested_at is not None
    status = machine("job", "status", run.run_id, home=li_home).data
    assert (status["terminal"], status["outcome"], status["alive"]) == (True, "cancelled", False)


def test_kill_reaches_every_member_of_the_group(li_home: str, sleepers, tmp_path) -> None:
    store = FsRunStore(li_home)
    run_id, leader = tagged(store, sleepers, ["sh", "-c", "sleep 120 & wait"])
    wait_for(lambda: psutil.Process(leader.pid).children())
    child = psutil.Process(leader.pid).children()[0]
    run = started(store, run_id, leader)
    assert kill(run.run_id, li_home)["action"] == "signalled"
    leader.gone()
    wait_for(lambda: not child.is_running() or child.status() == psutil.STATUS_ZOMBIE)


def test_a_group_that_ignores_sigterm_gets_sigkill_after_the_grace(li_home: str, sleepers, tmp_path) -> None:
    ready = tmp_path / "ready"
    store = FsRunStore(li_home)
    run_id, process = tagged(store, sleepers, ["sh", "-c", f"trap '' TERM; touch {ready}; exec sleep 120"])
    wait_for(ready.exists)
    run = started(store, run_id, process)
    assert kill(run.run_id, li_home)["action"] == "signalled"
    assert process.gone() == -signal.SIGKILL


def test_kill_of_a_finished_run_is_already_terminal_and_changes_nothing(li_home: str, sleepers) -> None:
    process = start(sleepers)  # a live process that holds the finished run's pid
    store = FsRunStore(li_home)
    run = a_run(store, datetime.now(UTC), RunState.STARTED, pid=process.pid, incarnation=process.incarnation())
    end(store, run.run_id, "completed", "succeeded")
    record = os.path.join(store.run_dir(run.run_id), "record.json")
    before = Path(record).read_bytes()
    answer = kill(run.run_id, li_home)
    assert answer == {"run_id": run.run_id, "action": "already_terminal", "status": "completed",
                      "terminal": True, "outcome": "succeeded"}
    assert Path(record).read_bytes() == before
    assert process.proc.poll() is None


def test_kill_never_signals_a_live_process_a_record_names_unless_it_is_the_runs(li_home: str, sleepers) -> None:
    """The record is untrusted (the work can rewrite it): a process with the recorded identity but
    without the run's LI_RUN_ID, or with another run's, is never signalled for it."""
    store = FsRunStore(li_home)
    other_id, others = tagged(store, sleepers)
    for process in (start(sleepers), others):
        run = a_run(store, datetime.now(UTC), RunState.STARTED, pid=process.pid, incarnation=process.incarnation())
        assert kill(run.run_id, li_home)["action"] == "no_process"
        assert store.read(run.run_id).kill_requested_at is None
    time.sleep(0.3)
    assert all(p.proc.poll() is None for p in sleepers), "a process that is not the run's was signalled"


def test_kill_refuses_a_reused_pid(li_home: str, sleepers) -> None:
    process = start(sleepers)
    store = FsRunStore(li_home)
    stale = process.incarnation(create_time_shift=-300.0)  # our run's process was another, older one
    run = a_run(store, datetime.now(UTC), RunState.STARTED, pid=process.pid, incarnation=stale)
    answer = kill(run.run_id, li_home)
    assert answer["action"] == "no_process"
    time.sleep(0.3)
    assert process.proc.poll() is None, "a process that is not the run's was signalled"


def test_kill_of_a_run_whose_process_is_gone_is_no_process(li_home: str, sleepers) -> None:
    process = start(sleepers)
    store = FsRunStore(li_home)
    run = a_run(store, datetime.now(UTC), RunState.STARTED, pid=process.pid, incarnation=process.incarnation())
    process.kill_group()
    process.gone()
    answer = kill(run.run_id, li_home)
    assert answer["action"] == "no_process"
    # it ended on its own: the kill is not recorded, so its end is not misattributed to the kill
    assert (answer["terminal"], answer["outcome"], answer["status"]) == (True, "indeterminate", "exited")
    assert store.read(run.run_id).kill_requested_at is None


def test_work_that_outlives_its_sigkilled_runner_keeps_the_run_alive_until_kill_reaches_it(
        li_home: str, tmp_path: Path) -> None:
    handle = machine("agent", "--detach", "--machine", "--cwd", str(tmp_path), "sh", "sleep 30; touch M",
                     home=li_home).data
    run_id, runner = handle["run_id"], handle["pid"]
    incarnation = FsRunStore(li_home).read(run_id).incarnation
    assert incarnation is not None
    try:
        # the shell (its own group) and its sleep; in a PID namespace of their own, also
        # the relay outside it and the namespace's init
        wait_for(lambda: len(session_work(runner)) == (
            4 if FsRunStore(li_home).read(run_id).processes == "pid_namespace" else 2))
        work = session_work(runner)
        os.kill(runner, signal.SIGKILL)  # the runner only
        wait_for(lambda: is_gone(runner))
        status = machine("job", "status", run_id, home=li_home).data
        assert (status["terminal"], status["alive"], status["outcome"]) == (False, True, None)
        assert machine("job", "wait", run_id, "--max-wait", "0", home=li_home).data["pending"] == [run_id]
        answer = kill(run_id, li_home)
        assert answer["action"] == "signalled"
        wait_for(lambda: all(is_gone(pid) for pid in work))
        assert FsRunStore(li_home).read(run_id).kill_requested_at is not None
        status = machine("job", "status", run_id, home=li_home).data
        assert (status["status"], status["terminal"], status["outcome"]) == ("cancelled", True, "cancelled")
        assert not (tmp_path / "M").exists()
    finally:
        kill_session(run_id, incarnation)


# --- found by an adversarial review of the real li; each pins one fixed defect ---------------


def test_kill_with_recorded_pgid_zero_does_not_signal_the_callers_group(li_home: str, sleepers) -> None:
    process = Sleeper()
    sleepers.append(process)
    store = FsRunStore(li_home)
    run = a_run(store, datetime.now(UTC), RunState.STARTED, pid=process.pid,
                  incarnation=replace(process.incarnation(), pgid=0))
    env = dict(os.environ, LI_HOME=li_home, **FAST)
    # setsid: li leads its own group, so a killpg(0) can only hit li itself and not pytest
    proc = subprocess.run(["setsid", "-w", li_bin(), "job", "kill", run.run_id, "--machine"],
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    assert json.loads(proc.stdout)["contract_version"] == 1



def test_kill_signals_the_runs_own_group_not_a_recorded_foreign_one(li_home: str, sleepers) -> None:
    target, bystander = Sleeper(), Sleeper()
    sleepers.extend([target, bystander])
    store = FsRunStore(li_home)
    run = a_run(store, datetime.now(UTC), RunState.STARTED, pid=target.pid,
                  incarnation=replace(target.incarnation(), pgid=bystander.pid))
    data = machine("job", "kill", run.run_id, home=li_home, env=FAST).data
    time.sleep(0.3)
    assert bystander.proc.poll() is None, "a process outside the run's group was killed"
    assert data["action"] != "signalled" or target.proc.poll() is not None



def test_kill_with_a_negative_recorded_pgid_is_not_internal(li_home: str, sleepers) -> None:
    process = Sleeper()
    sleepers.append(process)
    store = FsRunStore(li_home)
    run = a_run(store, datetime.now(UTC), RunState.STARTED, pid=process.pid,
                  incarnation=replace(process.incarnation(), pgid=-7))
    envelope = envelope_of(run_li("job", "kill", run.run_id, "--machine", home=li_home, env=FAST))
    assert envelope["ok"] is True or envelope["error"]["kind"] != "internal", envelope



def test_kill_recorded_during_preparing_is_honoured_when_the_runner_starts(li_home: str) -> None:
    template = submit_detached(li_home, "true")
    wait_terminal(li_home, template)
    store = FsRunStore(li_home)
    record = json.loads(Path(store.run_dir(template), "record.json").read_text())
    run = a_run(store, datetime.now(UTC), RunState.PREPARING, model=record["model"],
                  cwd=record["cwd"], extra=record["extra"])
    marker = Path(li_home) / "work-ran"
    for name in ("request.json", "instruction.txt"):
        shutil.copy(Path(store.run_dir(template), name), Path(store.run_dir(run.run_id), name))
    Path(store.run_dir(run.run_id), "instruction.txt").write_text(f'touch {marker}; echo x > "$LI_ARTIFACTS_DIR/a"')

    kill = machine("job", "kill", run.run_id, home=li_home, env=FAST).data
    assert kill["terminal"] is False  # nothing to signal yet; the request is recorded
    # the submitter's spawn happens now, right after its pre-spawn write
    subprocess.run([sys.executable, "-m", "lionrun.entrypoints.runner", run.run_id], capture_output=True,
                   timeout=60, env=dict(os.environ, LI_HOME=li_home),
                   cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    after = status_data(li_home, run.run_id)
    assert after["terminal"] is True
    assert after["outcome"] == "cancelled", after
    assert not marker.exists(), "the work ran although a kill was recorded before it started"
