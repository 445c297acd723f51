"""`li job prune` end to end, on real processes: only runs that recorded an end ever leave the store."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import psutil
import pytest

from lionrun.adapters.fs_store import FsRunStore
from lionrun.adapters.processes import host_facts
from lionrun.domain.run import PREPARING, STARTED, Incarnation, Run, iso
from tests.support import machine, run_li


def record(home: str, *, status: str = "running", spawn_state: str = STARTED, pid: int | None = None,
           host_id: str | None = None, create_time: float | None = None, submitted_ago: float = 0.0,
           finished_ago: float | None = None) -> str:
    """Write a record as the lifecycle authority would have, for a process we control."""
    store, now = FsRunStore(home), datetime.now(UTC)
    submitted = now - timedelta(seconds=submitted_ago)
    run_id = store.reserve(submitted)
    facts = host_facts()
    incarnation = None if pid is None else Incarnation(
        host_id or facts.host_id, facts.boot_id, pid, create_time, pid)
    store.create(Run(
        run_id=run_id, kind="agent", status=status, submitted_at=iso(submitted), spawn_state=spawn_state,
        pid=pid, incarnation=incarnation, finished_at=None if finished_ago is None else iso(
            now - timedelta(seconds=finished_ago)),
    ))
    return run_id


@pytest.fixture
def live_process():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    try:
        yield child.pid, psutil.Process(child.pid).create_time()
    finally:
        child.kill()
        child.wait()


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def on_disk(home: str) -> set[str]:
    return set(os.listdir(os.path.join(home, "runs")))


def test_prune_removes_ended_runs_and_never_a_run_that_has_not_ended(li_home, live_process) -> None:
    pid, created = live_process
    running = record(li_home, pid=pid, create_time=created)
    fresh = record(li_home, status="preparing", spawn_state=PREPARING)
    aged = record(li_home, status="preparing", spawn_state=PREPARING, submitted_ago=3 * 86400)
    foreign = record(li_home, pid=dead_pid(), host_id="another-host", create_time=1.0)
    unidentified = record(li_home, pid=pid, create_time=None)
    ended = record(li_home, status="completed", pid=dead_pid(), create_time=1.0, finished_ago=60)
    orphan = record(li_home, pid=dead_pid(), create_time=1.0)
    data = machine("job", "prune", home=li_home).data
    assert sorted(data["removed"]) == sorted([ended, orphan]) and data["dry_run"] is False
    kept = {k["run_id"]: k["reason"] for k in data["kept"]}
    assert kept == dict.fromkeys([running, fresh, aged, foreign, unidentified], "not_ended")
    assert on_disk(li_home) == {running, fresh, aged, foreign, unidentified}
    assert psutil.pid_exists(pid)


def test_a_dry_run_removes_nothing_and_says_what_would_go(li_home) -> None:
    ended = record(li_home, status="failed", pid=dead_pid(), create_time=1.0, finished_ago=60)
    data = machine("job", "prune", "--dry-run", home=li_home).data
    assert data == {"removed": [ended], "kept": [], "dry_run": True}
    human = run_li("job", "prune", "--dry-run", home=li_home)
    assert human.returncode == 0
    assert f"would remove {ended}" in human.stdout and "Would remove 1 ended run" in human.stdout
    assert on_disk(li_home) == {ended}


def test_older_than_keeps_what_ended_recently(li_home) -> None:
    old = record(li_home, status="completed", pid=dead_pid(), create_time=1.0, finished_ago=10 * 86400,
                 submitted_ago=10 * 86400)
    recent = record(li_home, status="completed", pid=dead_pid(), create_time=1.0, finished_ago=60)
    human = run_li("job", "prune", "--older-than", "7", home=li_home)
    assert human.returncode == 0, human.stderr
    assert f"removed {old}" in human.stdout and "kept 1 (1 ended recently)" in human.stdout
    assert on_disk(li_home) == {recent}


def test_an_unreadable_record_is_kept_and_named(li_home) -> None:
    broken = record(li_home, status="completed", pid=dead_pid(), create_time=1.0, finished_ago=60)
    with open(os.path.join(li_home, "runs", broken, "record.json"), "w") as handle:
        handle.write("not json")
    data = machine("job", "prune", home=li_home).data
    assert data["removed"] == [] and data["kept"][0]["run_id"] == broken
    assert data["kept"][0]["reason"] == "record_unusable"
    human = run_li("job", "prune", home=li_home)
    assert f"kept {broken}: record_unusable" in human.stdout


@pytest.mark.parametrize("days", ["-1", "abc", "nan", "inf", ""])
def test_a_bad_age_is_refused_with_one_envelope_or_one_line(li_home, days: str) -> None:
    ended = record(li_home, status="completed", pid=dead_pid(), create_time=1.0, finished_ago=60)
    error = machine("job", "prune", "--older-than", days, home=li_home).error
    assert error["kind"] == "invalid_input"
    human = run_li("job", "prune", "--older-than", days, home=li_home)
    assert human.returncode == 2 and human.stdout == ""
    assert len(human.stderr.strip().splitlines()) == 1 and "Traceback" not in human.stderr
    assert on_disk(li_home) == {ended}


def test_an_empty_store_prunes_nothing(li_home) -> None:
    assert machine("job", "prune", home=li_home).data == {"removed": [], "kept": [], "dry_run": False}
    assert "Removed 0 ended runs; kept 0." in run_li("job", "prune", home=li_home).stdout


def test_a_pruned_run_stays_gone_for_every_verb_and_leaves_no_folder(li_home) -> None:
    ended = record(li_home, status="completed", pid=dead_pid(), create_time=1.0, finished_ago=60)
    assert machine("job", "prune", home=li_home).data["removed"] == [ended]
    for verb in (("job", "status", ended), ("job", "kill", ended), ("job", "output", ended)):
        assert machine(*verb, home=li_home).error["kind"] == "not_found", verb
    assert on_disk(li_home) == set()


def test_trash_a_killed_prune_left_is_never_listed_and_the_next_prune_sweeps_it(li_home) -> None:
    left = record(li_home, status="completed", pid=dead_pid(), create_time=1.0, finished_ago=60)
    os.rename(os.path.join(li_home, "runs", left), os.path.join(li_home, "runs", f".trash-{left}-0123abcd"))
    ended = record(li_home, status="completed", pid=dead_pid(), create_time=1.0, finished_ago=60)
    listed = machine("job", "list", home=li_home).data
    assert [row["run_id"] for row in listed["runs"]] == [ended]
    assert machine("job", "prune", home=li_home).data == {"removed": [ended], "kept": [], "dry_run": False}
    assert on_disk(li_home) == set()
