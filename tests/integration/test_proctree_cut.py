"""The one rule every stop of a run applies to what its broker started (adapters/proctree.py,
issue 44 item 2), with real processes: a descendant of the run's head that leads a session of its
own, lives in the head's mount namespace and carries the broker's mark is no process of the run
(nor is what it started); anything short of all three still is."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest

from lionrun.adapters import proctree

MARK = "LI_BROKER_MARK"


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    children: list[subprocess.Popen[bytes]] = []
    yield children
    for child in children:
        proctree.kill_group(child.pid, signal.SIGKILL)
        child.kill()
        child.wait()


def start(children: list[subprocess.Popen[bytes]], argv: list[str], mark: str | None,
          session: bool) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != MARK}
    if mark is not None:
        env[MARK] = mark
    child = subprocess.Popen(argv, env=env, start_new_session=session)
    children.append(child)
    return child


def grandchild_of(pid: int) -> int:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = [p for p, stat in proctree.table() or () if stat[1] == pid]
        if found:
            return found[0]
        time.sleep(0.02)
    raise AssertionError(f"{pid} started nothing")


def test_what_the_broker_started_is_cut_with_what_it_started(started: list[subprocess.Popen[bytes]]) -> None:
    brokered = start(started, ["sh", "-c", "sleep 60 & wait"], "secret", session=True)
    in_session = start(started, ["sleep", "60"], "secret", session=False)
    unmarked = start(started, ["sleep", "60"], None, session=True)
    other_mark = start(started, ["sleep", "60"], "another", session=True)
    # (Popen returns once its child exec'd: each environment is the one the kernel kept)
    below = grandchild_of(brokered.pid)
    me = os.getpid()

    anyone = proctree.run_processes(me, None, cut=proctree.BROKER_MARK) or {}
    assert brokered.pid not in anyone and below not in anyone  # cut, with what it started
    assert other_mark.pid not in anyone  # any mark: the kill from outside does not know the secret
    assert {in_session.pid, unmarked.pid} <= set(anyone)  # no session of its own; no mark

    exact = proctree.run_processes(me, None, cut=proctree.BROKER_MARK + b"secret") or {}
    assert brokered.pid not in exact and below not in exact
    assert {in_session.pid, unmarked.pid, other_mark.pid} <= set(exact)  # a mark that is not the head's

    uncut = proctree.run_processes(me, None) or {}
    assert {brokered.pid, below, in_session.pid, unmarked.pid, other_mark.pid} <= set(uncut)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="a mount namespace of its own needs root (or a user namespace) and unshare(1)")
def test_a_marked_session_leader_in_another_mount_namespace_is_still_the_runs(
        started: list[subprocess.Popen[bytes]]) -> None:
    """A confined work lives in a mount namespace of its own and cannot come back to the head's:
    a process of it that leads a session and names itself with the mark is not cut."""
    escaped = start(started, ["unshare", "--mount", "sleep", "60"], "secret", session=True)
    deadline = time.monotonic() + 10
    while os.readlink(f"/proc/{escaped.pid}/ns/mnt") == os.readlink("/proc/self/ns/mnt"):
        assert time.monotonic() < deadline, "unshare made no mount namespace"
        time.sleep(0.02)
    found = proctree.run_processes(os.getpid(), None, cut=proctree.BROKER_MARK) or {}
    assert escaped.pid in found
    assert escaped.pid in (proctree.run_processes(os.getpid(), None, cut=proctree.BROKER_MARK + b"secret") or {})


def test_the_one_group_signal_never_reaches_init_or_its_callers_group(started: list[subprocess.Popen[bytes]]) -> None:
    assert proctree.kill_group(0, 0) is False and proctree.kill_group(1, 0) is False
    assert proctree.kill_group(-5, 0) is False
    child = start(started, ["sleep", "60"], None, session=True)
    assert proctree.kill_group(child.pid, 0) is True
    assert proctree.kill_group(child.pid, signal.SIGTERM) is True
    assert child.wait(10) == -signal.SIGTERM
    assert proctree.kill_group(child.pid, 0) is False  # gone: nothing there


def test_stop_group_terms_then_kills_after_the_grace(started: list[subprocess.Popen[bytes]]) -> None:
    deaf = start(started, ["sh", "-c", "trap '' TERM; sleep 60 & wait; sleep 60"], None, session=True)
    time.sleep(0.3)
    began = time.monotonic()
    assert proctree.stop_group(deaf, 0.5) == -signal.SIGKILL
    assert 0.4 <= time.monotonic() - began < 10
    polite = start(started, ["sleep", "60"], None, session=True)
    assert proctree.stop_group(polite, 30) == -signal.SIGTERM
    left = start(started, ["sh", "-c", "trap 'exit 3' TERM; (trap '' TERM; exec sleep 60) & wait"], None,
                 session=True)
    below = grandchild_of(left.pid)
    assert proctree.stop_group(left, 30, then_kill=True) == 3
    deadline = time.monotonic() + 10
    while (stat := proctree.stat_of(str(below))) is not None and not proctree.zombie(stat[0]):
        assert time.monotonic() < deadline, "what the leader left in its group was not killed"
        time.sleep(0.02)
