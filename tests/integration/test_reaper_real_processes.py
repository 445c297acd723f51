"""The reaper against real processes, the real filesystem store and the psutil prober."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from lionrun.adapters.clocks import SystemClock
from lionrun.adapters.fakes import RecordingNotifier
from lionrun.adapters.fs_store import FsRunStore
from lionrun.adapters.processes import PsutilProber, host_facts
from lionrun.application.notify import Notices
from lionrun.application.observe import Observer
from lionrun.domain.run import STARTED, Incarnation, Run, iso
from tests.builders import assert_one_reap


def record_for(store: FsRunStore, pid: int, *, create_time: float | None = None, host_id: str | None = None,
               notify: list[str] | None = None) -> Run:
    """A started record whose incarnation is the real process `pid` (as submit records it)."""
    facts = host_facts()
    if create_time is None:
        create_time = PsutilProber().observe(pid).create_time
    now = datetime.now(UTC)
    run_id = store.reserve(now)
    incarnation = Incarnation(host_id or facts.host_id, facts.boot_id, pid, create_time, pid)
    return store.create(Run(run_id, "agent", "running", iso(now), label="real", spawn_state=STARTED,
                            started_at=iso(now), pid=pid, incarnation=incarnation, notify=notify))


@pytest.fixture
def store(li_home: str) -> FsRunStore:
    return FsRunStore(li_home)


@pytest.fixture
def group() -> Iterator[subprocess.Popen[bytes]]:
    """A real detached process group (a shell and its sleeping child), killed at teardown."""
    child = subprocess.Popen(["sh", "-c", "sleep 300 & wait"], start_new_session=True)
    yield child
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()


def observer(store: FsRunStore, notifier: RecordingNotifier | None = None) -> Observer:
    notices = Notices(store, notifier or RecordingNotifier())
    return Observer(store, PsutilProber(), SystemClock(), on_reaped=notices.send)


def test_a_sigkilled_group_is_reaped_as_indeterminate_naming_the_finding(
        store: FsRunStore, group: subprocess.Popen[bytes]) -> None:
    run = record_for(store, group.pid)
    os.killpg(group.pid, signal.SIGKILL)
    group.wait()
    _until_session_gone(group.pid)  # the SIGKILLed `sleep` may still be exiting on a loaded machine
    observed = observer(store).observe(run.run_id)
    d = observed.derivation
    assert (d.terminal, d.outcome, d.reason_code) == (True, "indeterminate", "process_gone_without_outcome")
    assert_one_reap(run, store.read(run.run_id))


def test_a_killed_child_not_yet_collected_is_a_zombie_of_ours_and_is_reaped(
        store: FsRunStore, group: subprocess.Popen[bytes]) -> None:
    run = record_for(store, group.pid)
    os.killpg(group.pid, signal.SIGKILL)
    _until_zombie(group.pid)
    _until_session_gone(group.pid)  # the SIGKILLed `sleep` may still be exiting on a loaded machine
    observed = observer(store).observe(run.run_id)
    assert observed.finding is not None and observed.finding.code == "process_zombie"
    assert observed.derivation.reason_code == "process_gone_zombie"


def test_a_live_process_with_the_recorded_create_time_is_never_reaped(
        store: FsRunStore, group: subprocess.Popen[bytes]) -> None:
    run = record_for(store, group.pid)
    for _ in range(3):
        observed = observer(store).observe(run.run_id)
        assert observed.finding is not None and observed.finding.code == "alive"
        assert not observed.derivation.terminal and not observed.derivation.stopped
    assert store.read(run.run_id) == run


def test_a_reused_pid_is_reaped_as_recycled(store: FsRunStore, group: subprocess.Popen[bytes]) -> None:
    created = PsutilProber().observe(group.pid).create_time
    assert created is not None
    run = record_for(store, group.pid, create_time=created - 3600)  # an older process had this pid
    observed = observer(store).observe(run.run_id)
    assert observed.derivation.reason_code == "process_gone_pid_recycled"
    assert group.poll() is None  # the live stranger is untouched


def test_a_record_copied_from_another_host_is_never_reaped_nor_called_stopped(
        store: FsRunStore, group: subprocess.Popen[bytes]) -> None:
    os.killpg(group.pid, signal.SIGKILL)
    group.wait()
    run = record_for(store, group.pid, create_time=1.0, host_id="another-host-entirely")
    notifier = RecordingNotifier()
    for _ in range(3):
        observed = observer(store, notifier).observe(run.run_id)
        d = observed.derivation
        assert not d.terminal and not d.stopped and not d.possibly_orphaned
    assert store.read(run.run_id) == run and notifier.sent == []


READER = textwrap.dedent("""
    import sys
    from lionrun.entrypoints.container import get_container
    observed = get_container().reads.observer().observe(sys.argv[1])
    print(observed.derivation.terminal, observed.derivation.outcome)
""")


def test_thirty_two_reader_processes_publish_one_reap_and_one_notice(
        store: FsRunStore, group: subprocess.Popen[bytes], li_home: str, tmp_path: object) -> None:
    notices = os.path.join(str(tmp_path), "notices.jsonl")
    run = record_for(store, group.pid, notify=["sh", "-c", 'cat >> "$0"; echo >> "$0"', notices])
    os.killpg(group.pid, signal.SIGKILL)
    group.wait()
    env = {**os.environ, "LI_HOME": li_home}
    readers = [subprocess.Popen([sys.executable, "-c", READER, run.run_id], env=env, cwd=_repo(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(32)]
    answers = [reader.communicate(timeout=120) for reader in readers]
    assert all(r.returncode == 0 for r in readers), [err for _, err in answers]
    assert {out.strip() for out, _ in answers} == {"True indeterminate"}
    assert_one_reap(run, store.read(run.run_id))
    after = _settled(store, run.run_id)  # the reap winner's sender runs detached, after its reader answered
    assert after.delivery is not None and after.delivery.ok is True
    with open(notices, encoding="utf-8") as handle:
        assert len([line for line in handle if line.strip()]) == 1


def _settled(store: FsRunStore, run_id: str, within: float = 60.0) -> Run:
    """The record once its delivery outcome is known, or as it stands after `within` seconds."""
    import time

    deadline = time.monotonic() + within
    while True:
        current = store.read(run_id)
        if current.delivery is None or current.delivery.ok is not None or time.monotonic() > deadline:
            return current
        time.sleep(0.02)


def _repo() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _until_session_gone(sid: int) -> None:
    """Until no process of session `sid` is left but zombies (a killed process is alive until it exits)."""
    import time

    import psutil

    for _ in range(500):
        left = []
        for process in psutil.process_iter():
            try:
                if os.getsid(process.pid) == sid and process.status() != psutil.STATUS_ZOMBIE:
                    left.append(process.pid)
            except (OSError, psutil.Error):
                continue
        if not left:
            return
        time.sleep(0.01)
    raise AssertionError(f"session {sid} still has live processes")


def _until_zombie(pid: int) -> None:
    import time

    import psutil

    for _ in range(200):
        if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return
        time.sleep(0.01)
    raise AssertionError("the killed child never became a zombie")
