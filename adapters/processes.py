"""Real processes: the psutil prober, the session signaller and the detached spawner."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import NamedTuple

from lionrun.adapters import proctree
from lionrun.application.ports import SpawnFailed, SpawnRequest, Stop
from lionrun.domain.evidence import (
    CREATE_TIME_TOLERANCE,
    HostFacts,
    ProcessObservation,
    SessionMember,
    is_member,
    members,
)
from lionrun.domain.run import RUN_TAG, Incarnation

SIGNALS: dict[Stop, int] = {"terminate": 15, "kill": 9}  # SIGTERM, SIGKILL: POSIX gives them these numbers
MACHINE_ID_PATHS = ("/etc/machine-id", "/var/lib/dbus/machine-id")
BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"


def first_line(path: str) -> str | None:
    """The first line of a small system file, or None when it is missing, empty or unreadable."""
    try:
        with open(path, "rb") as handle:
            raw = handle.readline()
    except OSError:
        return None
    # What a text-mode `readline()` (ascii, errors="replace", universal newlines) gives, without the
    # ascii codec's module, which a text-mode open imports on every read: the line ends at
    # the first \r or \n, and bytes.decode("ascii") needs no codec look-up.
    return raw.split(b"\r", 1)[0].decode("ascii", "replace").strip() or None


@cache
def host_facts() -> HostFacts:
    """This host's identity: machine id (else hostname) and the kernel's boot id."""
    host = next((found for path in MACHINE_ID_PATHS if (found := first_line(path))), None)
    if not host:
        import socket  # only where there is no machine id (start-up cost of every read)

        host = f"hostname:{socket.gethostname()}"
    return HostFacts(host_id=host,
                     boot_id=first_line(BOOT_ID_PATH))


class PsutilProber:
    """Advisory liveness (existence, create time, zombie state) from /proc, psutil where there is none; session scans of /proc."""

    def host(self) -> HostFacts:
        return host_facts()

    def session(self, sid: int, run_id: str | None = None,
                confined: bool = False) -> tuple[SessionMember, ...] | None:
        return scan_session(sid, run_id, confined=confined)

    def observe(self, pid: int) -> ProcessObservation:
        """From /proc where there is one (what psutil reads there, without importing it), else psutil."""
        seen = _proc_observation(pid)
        if seen is not None:
            return seen
        import psutil

        try:
            process = psutil.Process(pid)
            create_time = process.create_time()
            zombie = process.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return ProcessObservation(pid, exists=False)
        except psutil.AccessDenied:
            return ProcessObservation(pid, exists=True, access_denied=True)
        except (OSError, ValueError) as exc:
            return ProcessObservation(pid, exists=True, error=str(exc))
        return ProcessObservation(pid, exists=True, create_time=create_time, zombie=zombie)


class GroupSignaller:
    """Signals a fresh child's process group, or every verified member of a run's session.

    The runner leads its own session, and provider legs run in process groups of their own
    inside that session (so a timeout can stop one leg). A run's kill therefore signals the
    session's members process by process: each is pinned with a pidfd, re-verified from /proc
    as a member (its session id and start time), and only then signalled, so a pid reused in
    between is never hit. Zombies count as gone.
    """

    sweeps = 8  # rescans that catch members forked while the previous sweep was signalling

    def signal_group(self, pgid: int, stop: Stop) -> bool:
        if pgid <= 1:
            return False  # 0 is the caller's own group, 1 is init's: never a run's
        groups = session_groups(pgid)
        delivered = False
        for group in sorted((groups or set()) | {pgid}):
            delivered = proctree.kill_group(group, SIGNALS[stop]) or delivered
        return delivered

    def group_alive(self, pgid: int) -> bool:
        """Whether anything of a group this process started (or of its session) is still there."""
        if pgid <= 1:
            return False
        groups = session_groups(pgid)
        return bool(groups) if groups is not None else proctree.kill_group(pgid, 0)

    def signal_session(self, run_id: str, incarnation: Incarnation, stop: Stop,
                       spare_leader: bool = False, own_pids: bool = False,
                       confined: bool = False) -> tuple[int, ...]:
        """`own_pids`: the run's work ran in a PID namespace of its own, so of what left
        the leader's session only what lives in a nested namespace is the work's. `confined`: its
        work was confined, so what its broker started for it (a child run's runner, no process of
        this run) is spared (`proctree.brokered`)."""
        signum = SIGNALS[stop]
        # A live leader that is the run's own runner vouches for its whole session; without one,
        # each member must carry the run's tag itself (a rewritten record may name any session).
        needs_tag = None if _vouches(run_id, incarnation) else run_id
        tried: set[tuple[int, float | None]] = set()
        signalled: list[int] = []
        for _sweep in range(self.sweeps):
            fresh = [m for m in members(incarnation, scan_session(incarnation.pid, run_id, own_pids, confined) or ())
                     if (m.pid, m.create_time) not in tried and m.pid != os.getpid()  # never li itself
                     and not (spare_leader and m.pid == incarnation.pid)]
            if not fresh:
                break
            for member in fresh:
                tried.add((member.pid, member.create_time))
                if _signal_verified(incarnation, member, signum, needs_tag):
                    signalled.append(member.pid)
        return tuple(signalled)


def _vouches(run_id: str, incarnation: Incarnation) -> bool:
    """The recorded leader is alive, is the recorded incarnation, and is this run's runner."""
    leader = _member(incarnation.pid)
    return (leader is not None and not leader.zombie and leader.create_time is not None
            and incarnation.create_time is not None
            and abs(leader.create_time - incarnation.create_time) <= CREATE_TIME_TOLERANCE
            and carries_run(incarnation.pid, run_id))


def carries_run(pid: int, run_id: str) -> bool:
    """True when the process's environment (as the kernel kept it at exec) holds LI_RUN_ID=<run_id>."""
    return proctree.carries(pid, f"{RUN_TAG}={run_id}".encode())


def _signal_verified(incarnation: Incarnation, member: SessionMember, signum: int, needs_tag: str | None) -> bool:
    """Pin `pid` with a pidfd, re-read who it is, and signal it only if it is still a member
    (and, where no live leader vouches for the session, carries the run's tag).

    Once the pidfd is open it names that one process: if the pid is reused after this check,
    the signal goes to the pinned (ended) process and fails, never to the newcomer.
    """
    pid = member.pid
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return False  # gone already, or no pidfds here: nothing is signalled unverified
    try:
        now = _member(pid)
        if now is None or (member.tagged and now.create_time != member.create_time):
            return False  # a process outside the session is the one the scan saw, or none
        if not is_member(incarnation, SessionMember(now.pid, now.session, now.create_time, now.zombie,
                                                    member.tagged)):
            return False
        if needs_tag is not None and not carries_run(pid, needs_tag):
            return False  # in the named session, but nothing shows it is this run's
        import signal  # only a kill signals: no read pays for the module's enums

        signal.pidfd_send_signal(pidfd, signum)
        return True
    except OSError:
        return False  # it ended after the check (ESRCH), or it is not ours to signal (EPERM)
    finally:
        os.close(pidfd)


class ProcStat(NamedTuple):
    """The fields of /proc/<pid>/stat a session scan needs."""

    state: str
    pgrp: int
    session: int
    start_ticks: int  # clock ticks from boot to the process's start

    @property
    def zombie(self) -> bool:
        return self.state in ("Z", "X")


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def scan_session(sid: int, run_id: str | None = None, nested_only: bool = False,
                 confined: bool = False) -> tuple[SessionMember, ...] | None:
    """Every process whose session id is `sid`, plus whatever process holds pid `sid` — and, for
    a run (`run_id`), every other process of the run (`proctree.run_processes`): a descendant of
    `sid` (the runner is a child subreaper, so what the work started stays under it) or a process
    that carries the run's tag, started no earlier than `sid`. Those are marked `tagged`.
    `nested_only`: of the descendants only what lives in the run's own PID namespace;
    `confined`: what the run's broker started for its work is spared, as every stop spares it.

    Start times are computed as psutil computes create times (boot time plus start ticks), so
    they compare with the create time recorded at spawn. None when /proc cannot be read.
    """
    boot = boot_time()
    table = proctree.table()
    if boot is None or table is None:
        return None
    rows = list(table)
    found = [_as_member(pid, ProcStat(s[0], s[2], s[3], s[4]), boot) for pid, s in rows if s[3] == sid or pid == sid]
    if run_id is None:
        return tuple(found)
    sessions = {pid: s[3] for pid, s in rows}
    others = _beyond_session(sid, run_id, rows, {m.pid for m in found}, nested_only, confined)
    found += [SessionMember(pid, sessions[pid], float(ticks) / CLOCK_TICKS + boot, False, tagged=True)
              for pid, ticks in others.items()]
    return tuple(found)


Rows = list[tuple[int, tuple[str, int, int, int, int]]]


def _beyond_session(sid: int, run_id: str, rows: Rows, seen: set[int], nested_only: bool,
                    confined: bool) -> dict[int, int]:
    """The run's processes outside the session `seen` holds, started no earlier than `sid`."""
    since = next((s[4] for pid, s in rows if pid == sid), 0)
    cut = proctree.BROKER_MARK if confined else None
    others = proctree.run_processes(sid, f"{RUN_TAG}={run_id}".encode(), since, cut, rows) or {}
    own = _in_own_pids(set(others), seen, rows) if nested_only else None  # only its PID namespace's
    return {pid: ticks for pid, ticks in others.items()
            if pid not in seen and ticks >= since and (own is None or pid in own)}


def _in_own_pids(kin: set[int], members: set[int], rows: Rows) -> set[int]:
    """Of the run's descendants, those in its work's PID namespace: the namespace's init (a
    process in a nested namespace whose parent is a member of the run's session) and what it
    started. A child run its broker started is a descendant too, with a work of its own in
    another namespace, below that child's runner: none of it is this run's."""
    parents = [(pid, s[1]) for pid, s in rows]
    found: set[int] = set()
    for pid, s in rows:
        if pid in kin and s[1] in members and in_nested_pids(pid):
            found |= {pid} | proctree.kin(pid, parents)
    return found & kin


def _pid_depth(pid: int | str) -> int | None:
    """How many PID namespaces `pid` is seen in (the `NSpid` line of /proc/PID/status); None: unread."""
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"NSpid:"):
                    return len(line.split()) - 1
    except OSError:
        return None
    return None


def in_nested_pids(pid: int) -> bool:
    """Whether `pid` lives in a PID namespace below this process's (a run's own)."""
    mine, its = _pid_depth("self"), _pid_depth(pid)
    return mine is not None and its is not None and its > mine


def session_groups(leader: int) -> set[int] | None:
    """Process groups with a live (non-zombie) member in `leader`'s group or session.

    None where /proc cannot be read (then the caller falls back to the bare group).
    """
    table = proctree.table()
    if table is None:
        return None
    return {stat[2] for _pid, stat in table if not proctree.zombie(stat[0]) and leader in (stat[2], stat[3])}


def boot_time() -> float | None:
    """The kernel's boot time (`btime` of /proc/stat), the epoch of every start time in /proc."""
    try:
        with open("/proc/stat", "rb") as handle:
            for line in handle:
                if line.startswith(b"btime"):
                    return float(line.split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return None


def _proc_observation(pid: int) -> ProcessObservation | None:
    """Existence, create time and zombie state from /proc/<pid>/stat, computed as psutil computes
    them on Linux (boot time plus start ticks; zombie is state Z). None when /proc cannot tell
    (no /proc, a pid psutil would refuse, a stat that exists but cannot be read): then psutil."""
    if pid <= 0 or not os.path.isdir("/proc/self"):
        return None
    stat = _stat_of(str(pid))
    if stat is None:
        return ProcessObservation(pid, exists=False) if not os.path.lexists(f"/proc/{pid}") else None
    boot = boot_time()
    if boot is None:
        return None
    return ProcessObservation(pid, exists=True, create_time=float(stat.start_ticks) / CLOCK_TICKS + boot,
                              zombie=stat.state == "Z")


def _member(pid: int) -> SessionMember | None:
    stat, boot = _stat_of(str(pid)), boot_time()
    return None if stat is None or boot is None else _as_member(pid, stat, boot)


def _as_member(pid: int, stat: ProcStat, boot: float) -> SessionMember:
    return SessionMember(pid, stat.session, float(stat.start_ticks) / CLOCK_TICKS + boot, stat.zombie)


def _stat_of(pid: str) -> ProcStat | None:
    """The scan's fields of /proc/<pid>/stat, or None when the process is gone."""
    found = proctree.stat_of(pid)
    return None if found is None else ProcStat(found[0], found[2], found[3], found[4])


class DetachedSpawner:
    """Own session and process group, stdin closed, output to the run's console log."""

    def spawn(self, request: SpawnRequest) -> int:
        import subprocess  # a submit's, not a read's (start-up cost)

        try:
            with _output(request) as log:
                child = subprocess.Popen(
                    list(request.argv), cwd=request.cwd, env=dict(request.env),
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True, close_fds=True, pass_fds=tuple(request.keeps),
                )
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            raise SpawnFailed(f"{type(exc).__name__}: {exc}") from exc
        return child.pid


@contextmanager
def _output(request: SpawnRequest) -> Iterator[int]:
    """The child's stdout: the console sink the store opened, else `log_path` opened for appending."""
    if request.console is not None:
        yield request.console
        return
    fd = os.open(request.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        yield fd
    finally:
        os.close(fd)
