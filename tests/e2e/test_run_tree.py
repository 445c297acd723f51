"""The run is every process its work started, through the real `li`.

An agent CLI starts its shell tool in a session of its own; here the work does the same with
`setsid`. After `li job kill` and after `--timeout` — in the lean supervisor and in the full
runner — no process of the run is alive once its end is recorded, and what the escaped process
would have written later is never written.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from lionrun.adapters import proctree
from lionrun.adapters.fs_store import FsRunStore
from lionrun.adapters.processes import carries_run
from tests.builders import is_gone, kill_session
from tests.support import machine, status_data

ESCAPES = "setsid sh -c 'sleep 3; touch late' & sleep 30"
FAST = {"LI_KILL_GRACE": "0.3"}


def run_processes(run_id: str) -> list[int]:
    """Every live process on the host whose environment carries the run's tag."""
    found = proctree.run_processes(-1, f"LI_RUN_ID={run_id}".encode()) or {}
    return sorted(found)


def escaped(run_id: str, within: float = 10.0) -> int:
    """The pid of the run's `sh -c 'sleep 3; ...'` once it has left the runner's session."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        for pid in run_processes(run_id):
            stat = proctree.stat_of(str(pid))
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if stat is not None and stat[3] == pid and b"touch late" in command:
                return pid
        time.sleep(0.05)
    raise AssertionError(f"the work never escaped its session: {run_processes(run_id)}")


def nothing_written_after_the_end(late: Path, ended: dict) -> None:
    """What the escaped process would write 3 s in is never written after the run's end. (On a
    loaded machine the stop may land after those 3 s: then it was written while the run still ran,
    before its end was recorded, which is no process outliving the end.)"""
    time.sleep(3.5)
    if late.exists():
        from datetime import datetime

        finished = datetime.fromisoformat(ended["finished_at"]).timestamp()
        assert late.stat().st_mtime <= finished, (late.stat().st_mtime, ended["finished_at"])


def ended_with_nothing_alive(home: str, run_id: str, within: float = 20.0) -> dict:
    """Poll until the end is recorded; at that moment no process of the run's work may be alive
    (its runner, which has just recorded the end, exits after it)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive_before = run_processes(run_id)
        data = status_data(home, run_id)
        if data["terminal"]:
            assert [pid for pid in run_processes(run_id) if pid != data["pid"]] == [], (data, alive_before)
            return data
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} never ended")


def submit(home: str, cwd: Path, *options: str, mode: str = "lean", work: str = ESCAPES) -> str:
    return machine("agent", "--detach", "--cwd", str(cwd), *options, "sh", work, home=home,
                   env={"LI_SUPERVISOR": mode}).data["run_id"]


@pytest.fixture(params=["lean", "full"])
def supervisor_mode(request) -> str:
    """The lean supervisor watches a one-leg run; LI_SUPERVISOR=full keeps it in the full runner."""
    return str(request.param)


def test_kill_stops_the_process_that_left_the_session(li_home: str, tmp_path: Path, supervisor_mode: str) -> None:
    run_id = submit(li_home, tmp_path, mode=supervisor_mode)
    incarnation = None
    try:
        pid = escaped(run_id)
        incarnation = FsRunStore(li_home).read(run_id).incarnation
        assert proctree.stat_of(str(pid))[3] != status_data(li_home, run_id)["pid"]  # another session
        killed = machine("job", "kill", run_id, home=li_home, env=FAST).data
        assert killed["action"] == "signalled", killed
        ended = ended_with_nothing_alive(li_home, run_id)
        assert (ended["status"], ended["outcome"]) == ("cancelled", "cancelled"), ended
        nothing_written_after_the_end(tmp_path / "late", ended)
    finally:
        if incarnation is not None:
            kill_session(run_id, incarnation)


def test_the_timeout_stops_the_process_that_left_the_session(li_home: str, tmp_path: Path,
                                                             supervisor_mode: str) -> None:
    run_id = submit(li_home, tmp_path, "--timeout", "1", mode=supervisor_mode)
    escaped(run_id)
    ended = ended_with_nothing_alive(li_home, run_id)
    assert (ended["status"], ended["reason_code"]) == ("timed_out", "timeout"), ended
    nothing_written_after_the_end(tmp_path / "late", ended)


def test_a_process_the_work_left_running_is_stopped_before_the_end_is_recorded(
        li_home: str, tmp_path: Path, supervisor_mode: str) -> None:
    run_id = submit(li_home, tmp_path, mode=supervisor_mode, work="setsid sh -c 'sleep 3; touch late' & echo done")
    ended = ended_with_nothing_alive(li_home, run_id)
    assert (ended["status"], ended["outcome"]) == ("completed", "succeeded"), ended
    output = machine("job", "output", run_id, home=li_home).data
    assert "process(es) the work left running" in output["li_log"]["value"], output
    nothing_written_after_the_end(tmp_path / "late", ended)


def test_an_escaped_tool_keeps_a_run_whose_runner_was_sigkilled_alive_and_kill_reaches_it(
        li_home: str, tmp_path: Path) -> None:
    run_id = submit(li_home, tmp_path)
    runner = status_data(li_home, run_id)["pid"]
    incarnation = FsRunStore(li_home).read(run_id).incarnation
    assert incarnation is not None
    try:
        pid = escaped(run_id)
        os.kill(runner, signal.SIGKILL)  # the runner only: its session's sleep and the escaped tool live on
        deadline = time.monotonic() + 10
        while not is_gone(runner):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        for member in run_processes(run_id):  # the session's own work too: only the escaped tool is left
            stat = proctree.stat_of(str(member))
            if stat is not None and stat[3] == runner:
                os.kill(member, signal.SIGKILL)
        if FsRunStore(li_home).read(run_id).processes == "pid_namespace":
            # The session's own processes include the work's PID namespace's init, and
            # its end is the namespace's: the tool that left the session did not escape the run
            deadline = time.monotonic() + 10
            while not is_gone(pid):
                assert time.monotonic() < deadline, "the escaped tool outlived its namespace"
                time.sleep(0.02)
            status = status_data(li_home, run_id)
            assert status["terminal"] is True, status
            nothing_written_after_the_end(tmp_path / "late", status)
            return
        assert carries_run(pid, run_id)
        status = status_data(li_home, run_id)
        assert (status["terminal"], status["alive"]) == (False, True), status  # never reaped while it lives
        killed = machine("job", "kill", run_id, home=li_home, env=FAST).data
        assert killed["action"] == "signalled", killed
        deadline = time.monotonic() + 10
        while not is_gone(pid):
            assert time.monotonic() < deadline, "kill did not reach the escaped tool"
            time.sleep(0.02)
        status = status_data(li_home, run_id)
        assert status["terminal"] is True, status
        nothing_written_after_the_end(tmp_path / "late", status)
    finally:
        kill_session(run_id, incarnation)


def test_a_process_of_the_work_that_names_another_run_is_still_stopped(li_home: str, tmp_path: Path,
                                                                      supervisor_mode: str) -> None:
    """The work cannot hide a process from the run's stop by renaming it: one that left the session
    with LI_RUN_ID set to another run is still the runner's descendant, so the run's end waits for
    it to be stopped, and what it would have written later is never written."""
    work = "LI_RUN_ID=20990101T000000-aaaaaa setsid sh -c 'sleep 3; touch late' & echo started"
    run_id = submit(li_home, tmp_path, mode=supervisor_mode, work=work)
    ended = ended_with_nothing_alive(li_home, run_id)
    assert (ended["status"], ended["outcome"]) == ("completed", "succeeded"), ended
    output = machine("job", "output", run_id, home=li_home).data
    assert "process(es) the work left running" in output["li_log"]["value"], output
    nothing_written_after_the_end(tmp_path / "late", ended)
