"""Runs watched by the lean supervisor, end to end through the real `li`.

A one-leg run on the filesystem store: while its work runs, the run's process (same pid, same
session, same incarnation) is `python -I -S adapters/supervisor.py`, not the full runner; the end
is recorded by the full runner exec'd after the work (`--finish`), exactly as before.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path

from lionrun.adapters.fs_store import FsRunStore
from lionrun.adapters.processes import carries_run
from lionrun.domain.run import iso
from tests.support import machine, status_data, submit_detached, wait_terminal

LEAN_RSS_KB = 16 * 1024  # the full runner holds 20-30 MB; the target, 12 MB, is benchmarks/targets.toml's


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def supervising(home: str, run_id: str, within: float = 20.0) -> int:
    """The run's pid, once it is the lean supervisor (and the work has started under it)."""
    pid = status_data(home, run_id)["pid"]
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if any(part.endswith("supervisor.py") for part in cmdline(pid)) and \
                Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
            return int(pid)
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} never became the lean supervisor: {cmdline(pid)}")


def test_a_one_leg_run_is_watched_by_the_lean_supervisor_and_killed_through_it(li_home: str) -> None:
    run_id = submit_detached(li_home, "sh", "echo started; sleep 60")
    pid = supervising(li_home, run_id)
    assert cmdline(pid)[1:3] == ["-I", "-S"]
    assert rss_kb(pid) < LEAN_RSS_KB, rss_kb(pid)
    assert carries_run(pid, run_id)  # li job kill still finds the run's own runner at its head
    data = status_data(li_home, run_id)
    assert (data["terminal"], data["status"], data["pid"]) == (False, "running", pid)
    killed = machine("job", "kill", run_id, home=li_home).data
    assert killed["action"] == "signalled", killed
    ended = wait_terminal(li_home, run_id)
    assert (ended["terminal"], ended["status"], ended["outcome"]) == (True, "cancelled", "cancelled")
    store = FsRunStore(li_home)
    record = store.read(run_id)
    assert (record.terminal_source, record.incarnation.pid if record.incarnation else None) == ("runner", pid)
    console = Path(store.run_dir(run_id), "console.log").read_text()
    said = Path(store.run_dir(run_id), "li.log").read_text()
    assert console.startswith("started\n") and "li runner" not in console  # the work's bytes alone
    assert "li runner: cancelled" in said


def test_a_kill_request_recorded_in_the_record_stops_a_lean_run(li_home: str) -> None:
    """What `li job kill` from another host of a shared filesystem store records: the run's own
    supervisor, looking at its record, stops the work and the end says why."""
    run_id = submit_detached(li_home, "sh", "sleep 60")
    supervising(li_home, run_id)
    store = FsRunStore(li_home)
    asked = time.monotonic()
    store.update(run_id, lambda run: run.evolve(kill_requested_at=iso(datetime.now(UTC))))
    ended = wait_terminal(li_home, run_id)
    assert (ended["status"], ended["reason_code"]) == ("cancelled", "kill_requested"), ended
    assert time.monotonic() - asked < 5
    assert "li runner: a kill request is recorded" in Path(store.run_dir(run_id), "li.log").read_text()
    assert "li runner" not in Path(store.run_dir(run_id), "console.log").read_text()


def test_a_lean_run_s_answer_manifest_and_timeout_are_the_runner_s(li_home: str) -> None:
    done = submit_detached(li_home, "sh", "echo answer; echo noise >&2")
    assert wait_terminal(li_home, done)["outcome"] == "succeeded"
    store = FsRunStore(li_home)
    assert Path(store.run_dir(done), "artifacts", "response.md").read_text() == "answer\n"
    slow = submit_detached(li_home, "--timeout", "1", "sh", "sleep 60")
    supervising(li_home, slow)
    ended = wait_terminal(li_home, slow, timeout=20)
    assert (ended["status"], ended["reason_code"]) == ("timed_out", "timeout"), ended


def test_li_supervisor_full_and_runs_of_several_legs_keep_the_full_runner(li_home: str) -> None:
    old = os.environ.get("LI_SUPERVISOR")
    os.environ["LI_SUPERVISOR"] = "full"
    try:
        run_id = submit_detached(li_home, "sh", "sleep 60")
    finally:
        if old is None:
            del os.environ["LI_SUPERVISOR"]
        else:
            os.environ["LI_SUPERVISOR"] = old
    pid = status_data(li_home, run_id)["pid"]
    time.sleep(1.0)
    assert "lionrun.entrypoints.runner" in cmdline(pid), cmdline(pid)
    machine("job", "kill", run_id, home=li_home)
    assert wait_terminal(li_home, run_id)["status"] == "cancelled"
