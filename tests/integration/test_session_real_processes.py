"""A run is its runner's whole session, on real processes: the /proc scan, the Observer and the signaller."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass

import psutil
import pytest
from msgspec.structs import replace

from lionrun.adapters.clocks import SystemClock
from lionrun.adapters.fs_store import FsRunStore
from lionrun.adapters.processes import GroupSignaller, PsutilProber, host_facts, scan_session
from lionrun.application.observe import Observer
from lionrun.domain.run import Incarnation
from tests.builders import is_gone as gone
from tests.integration.test_group_signaller import wait_until
from tests.integration.test_reaper_real_processes import record_for

# A runner's shape: it leads its session, its leg runs in a process group of its own, the leg has a child.
RUNNER = textwrap.dedent("""
    import subprocess, sys, time
    leg = subprocess.Popen(["sh", "-c", "sleep 300 & echo $!; wait"], process_group=0,
                           stdout=subprocess.PIPE, text=True)
    print(leg.pid, leg.stdout.readline().strip(), flush=True)
    time.sleep(300)
""")


RUN = "20260101T000000-5e5510"  # the tag every process of the fixture's run carries (LI_RUN_ID)
TAGGED = {**os.environ, "LI_RUN_ID": RUN}


@dataclass
class Session:
    runner: subprocess.Popen[str]
    leg: int
    sleep: int

    def incarnation(self) -> Incarnation:
        here = host_facts()
        created = PsutilProber().observe(self.runner.pid).create_time
        return Incarnation(here.host_id, here.boot_id, self.runner.pid, created, self.runner.pid)

    def kill_runner_only(self) -> None:
        self.runner.send_signal(signal.SIGKILL)
        self.runner.wait()  # collected: its pid is absent, while its session id stays in use by the work


@pytest.fixture
def session() -> Iterator[Session]:
    runner = subprocess.Popen([sys.executable, "-c", RUNNER], start_new_session=True,
                              stdout=subprocess.PIPE, text=True, env=TAGGED)
    leg, sleep = (int(word) for word in runner.stdout.readline().split())  # type: ignore[union-attr]
    yield Session(runner, leg, sleep)
    GroupSignaller().signal_group(runner.pid, "kill")  # every group of the session
    with contextlib.suppress(ProcessLookupError):
        runner.kill()
    runner.wait()


@pytest.fixture
def store(li_home: str) -> FsRunStore:
    return FsRunStore(li_home)


def observer(store: FsRunStore) -> Observer:
    return Observer(store, PsutilProber(), SystemClock())


def test_the_scan_finds_every_process_of_the_session_with_psutils_start_times(session: Session) -> None:
    found = {m.pid: m for m in scan_session(session.runner.pid) or ()}
    assert {session.runner.pid, session.leg, session.sleep} <= set(found)
    assert os.getpgid(session.leg) == session.leg != session.runner.pid  # the leg leads a group of its own
    for pid in (session.runner.pid, session.leg, session.sleep):
        assert found[pid].session == session.runner.pid and not found[pid].zombie
        assert abs((found[pid].create_time or 0.0) - psutil.Process(pid).create_time()) < 1e-6


def test_a_run_whose_runner_was_sigkilled_lives_while_its_work_does(session: Session, store: FsRunStore) -> None:
    run = record_for(store, session.runner.pid)
    session.kill_runner_only()
    for _ in range(2):
        observed = observer(store).observe(run.run_id)
        assert observed.finding is not None and observed.finding.code == "session_alive"
        assert (observed.derivation.terminal, observed.derivation.alive) == (False, True)
    assert store.read(run.run_id) == run
    GroupSignaller().signal_group(session.runner.pid, "kill")
    assert wait_until(lambda: gone(session.leg) and gone(session.sleep))
    d = observer(store).observe(run.run_id).derivation
    assert (d.terminal, d.outcome, d.reason_code) == (True, "indeterminate", "process_gone_without_outcome")


def test_the_signaller_reaches_the_work_of_a_runner_that_is_gone(session: Session) -> None:
    incarnation = session.incarnation()
    session.kill_runner_only()
    signalled = GroupSignaller().signal_session(RUN, incarnation, "terminate")
    assert sorted(signalled) == sorted([session.leg, session.sleep])
    assert wait_until(lambda: gone(session.leg) and gone(session.sleep))
    assert GroupSignaller().signal_session(RUN, incarnation, "kill") == ()


def test_a_live_runner_is_signalled_first_with_its_work(session: Session) -> None:
    signalled = GroupSignaller().signal_session(RUN, session.incarnation(), "kill")
    assert signalled[0] == session.runner.pid and set(signalled) == {session.runner.pid, session.leg, session.sleep}
    session.runner.wait(timeout=10)
    assert wait_until(lambda: gone(session.leg) and gone(session.sleep))


def test_processes_that_started_before_the_recorded_runner_are_never_members(
        session: Session, store: FsRunStore) -> None:
    later = replace(session.incarnation(), create_time=time.time() + 100)  # the record's runner started later
    run = record_for(store, session.runner.pid, create_time=later.create_time)
    session.kill_runner_only()
    assert GroupSignaller().signal_session(RUN, later, "kill") == ()
    time.sleep(0.2)
    assert not gone(session.leg) and not gone(session.sleep)
    assert observer(store).observe(run.run_id).derivation.terminal  # nothing of the record's session lives


SELF_KILL = textwrap.dedent("""
    import json, signal, subprocess, sys
    from lionrun.adapters.processes import GroupSignaller, PsutilProber, host_facts
    from lionrun.domain.run import Incarnation
    import os
    child = subprocess.Popen(["sleep", "300"])
    here, me = host_facts(), os.getpid()
    mine = Incarnation(here.host_id, here.boot_id, me, PsutilProber().observe(me).create_time, me)
    print(json.dumps({"child": child.pid,
                      "signalled": GroupSignaller().signal_session(os.environ["LI_RUN_ID"], mine, "terminate")}))
""")


def test_li_never_signals_itself_even_inside_the_run(tmp_path: object) -> None:
    done = subprocess.run([sys.executable, "-c", SELF_KILL], start_new_session=True, capture_output=True,
                          text=True, timeout=30, env=TAGGED, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert done.returncode == 0, done.stderr  # it was never signalled and finished its answer
    import json

    answer = json.loads(done.stdout)
    assert answer["signalled"] == [answer["child"]]


# A decoy on a reused pid: the kernel hands out the freed runner pid again (set through ns_last_pid).

DECOY = textwrap.dedent("""
    import subprocess, time
    child = subprocess.Popen(["sleep", "300"])
    print(child.pid, flush=True)
    time.sleep(300)
""")


def spawn_at(pid: int, argv: list[str]) -> subprocess.Popen[str] | None:
    """Start argv (in a session of its own) as `pid`; None where the kernel's next pid cannot be set."""
    for _ in range(50):
        try:
            with open("/proc/sys/kernel/ns_last_pid", "w", encoding="ascii") as handle:
                handle.write(str(pid - 1))
        except OSError:
            return None
        process = subprocess.Popen(argv, start_new_session=True, stdout=subprocess.PIPE, text=True)
        if process.pid == pid:
            return process
        process.kill()
        process.wait()
    return None


def test_a_setsid_decoy_on_the_freed_runner_pid_is_never_the_runs(store: FsRunStore) -> None:
    runner = subprocess.Popen(["sleep", "300"], start_new_session=True)
    run = record_for(store, runner.pid)
    assert run.incarnation is not None
    runner.kill()
    runner.wait()
    time.sleep(0.3)  # start times tell processes apart only beyond the 0.1 s tolerance (real reuse takes far longer)
    decoy = spawn_at(runner.pid, [sys.executable, "-c", DECOY])
    if decoy is None:
        pytest.skip("this kernel will not hand out a chosen pid (ns_last_pid needs CAP_SYS_ADMIN)")
    try:
        child = int(decoy.stdout.readline())  # type: ignore[union-attr]
        assert os.getsid(child) == runner.pid  # the decoy's work sits in a session numbered like the run's
        assert GroupSignaller().signal_session(run.run_id, run.incarnation, "kill") == ()
        observed = observer(store).observe(run.run_id)
        assert observed.derivation.reason_code == "process_gone_pid_recycled"
        assert decoy.poll() is None and not gone(child)
    finally:
        GroupSignaller().signal_group(decoy.pid, "kill")
        decoy.wait()


def test_a_session_that_does_not_carry_the_runs_tag_is_never_signalled_for_it(session: Session) -> None:
    """A rewritten record can name any session; only processes the kernel shows to be this run's are hit."""
    incarnation = session.incarnation()
    assert GroupSignaller().signal_session("20260101T000000-07e400", incarnation, "kill") == ()
    session.kill_runner_only()  # no live leader to vouch: each member must carry the tag itself
    assert GroupSignaller().signal_session("20260101T000000-07e400", incarnation, "kill") == ()
    time.sleep(0.2)
    assert not gone(session.leg) and not gone(session.sleep)

