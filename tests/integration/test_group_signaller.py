"""The real signaller: a run is its leader's whole session; zombies count as gone."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

from lionrun.adapters.processes import GroupSignaller, session_groups

LEADER = textwrap.dedent("""
    import signal, subprocess, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a runner that will not stop by itself
    leg = subprocess.Popen(["sleep", "300"], process_group=0)  # a leg in its own group
    print(leg.pid, flush=True)
    time.sleep(300)
""")


def gone(pid: int) -> bool:
    """Absent, or a zombie nobody has reaped yet."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except FileNotFoundError:
        return True


def wait_until(predicate: object, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


def test_a_sigkill_reaches_legs_running_in_their_own_groups_of_the_runs_session() -> None:
    leader = subprocess.Popen([sys.executable, "-c", LEADER], start_new_session=True,
                              stdout=subprocess.PIPE, text=True)
    try:
        leg = int(leader.stdout.readline())  # type: ignore[union-attr]
        assert os.getpgid(leg) == leg != leader.pid and os.getsid(leg) == leader.pid
        assert session_groups(leader.pid) == {leader.pid, leg}
        signaller = GroupSignaller()
        assert signaller.signal_group(leader.pid, "terminate") is True  # ignored by the leader
        assert signaller.group_alive(leader.pid) is True
        assert signaller.signal_group(leader.pid, "kill") is True
        leader.wait(timeout=10)
        assert wait_until(lambda: gone(leg)), "the leg in its own group survived the run's SIGKILL"
        assert signaller.group_alive(leader.pid) is False
    finally:
        if leader.poll() is None:
            leader.kill()
            leader.wait()


def test_a_group_of_unreaped_zombies_is_not_still_alive() -> None:
    child = subprocess.Popen(["true"], start_new_session=True)
    assert wait_until(lambda: gone(child.pid))  # exited, not yet reaped: a zombie of ours
    try:
        assert GroupSignaller().group_alive(child.pid) is False
    finally:
        child.wait()


def test_signalling_a_group_that_does_not_exist_reports_nothing_delivered() -> None:
    child = subprocess.Popen(["true"], start_new_session=True)
    child.wait()
    assert GroupSignaller().signal_group(child.pid, "terminate") is False
