"""Real processes: the psutil prober, the process-group signaller and the detached spawner."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

from application.ports import SpawnFailed, SpawnRequest
from domain.evidence import HostFacts, ProcessObservation

MACHINE_ID_PATHS = ("/etc/machine-id", "/var/lib/dbus/machine-id")
BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"


def first_line(path: str) -> str | None:
    """The first line of a small system file, or None when it is missing, empty or unreadable."""
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.readline().strip() or None
    except OSError:
        return None


@cache
def host_facts() -> HostFacts:
    """This host's identity: machine id (else hostname) and the kernel's boot id."""
    host = next((found for path in MACHINE_ID_PATHS if (found := first_line(path))), None)
    return HostFacts(host_id=host or f"hostname:{socket.gethostname()}",
                     boot_id=first_line(BOOT_ID_PATH))


class PsutilProber:
    """Advisory liveness from psutil: existence, create time, zombie state."""

    def host(self) -> HostFacts:
        return host_facts()

    def observe(self, pid: int) -> ProcessObservation:
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
    """Signals a run: its process group and every group of the session its leader started.

    The runner leads its own session, and provider legs run in process groups of their own
    inside that session (so a timeout can stop one leg). Signalling the whole session means
    a SIGKILL after the grace also stops legs whose runner can no longer stop them. Zombies
    count as gone: a group of zombies nobody has reaped is not "still alive".
    """

    def signal_group(self, pgid: int, signum: int) -> bool:
        if pgid <= 1:
            return False  # 0 is the caller's own group, 1 is init's: never a run's
        groups = session_groups(pgid)
        if signum == 0:
            return bool(groups) if groups is not None else _killpg(pgid, 0)
        delivered = False
        for group in sorted((groups or set()) | {pgid}):
            delivered = _killpg(group, signum) or delivered
        return delivered


def _killpg(pgid: int, signum: int) -> bool:
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # something is there, just not ours to signal
    except OSError:
        return False  # an impossible group (EINVAL): nothing was signalled
    return True


def session_groups(leader: int) -> set[int] | None:
    """Process groups with a live (non-zombie) member in `leader`'s group or session.

    None where /proc cannot be read (then the caller falls back to the bare group).
    """
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    groups: set[int] = set()
    for entry in entries:
        if entry.isdigit():
            stat = _stat_of(entry)
            if stat is not None and stat[0] != "Z" and leader in (stat[1], stat[2]):
                groups.add(stat[1])
    return groups


def _stat_of(pid: str) -> tuple[str, int, int] | None:
    """(state, pgrp, session) from /proc/<pid>/stat, or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        return fields[0].decode(), int(fields[2]), int(fields[3])
    except (OSError, IndexError, ValueError):
        return None


class DetachedSpawner:
    """Own session and process group, stdin closed, output to the run's console log."""

    def spawn(self, request: SpawnRequest) -> int:
        try:
            with _output(request) as log:
                child = subprocess.Popen(
                    list(request.argv), cwd=request.cwd, env=dict(request.env),
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True, close_fds=True,
                )
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            raise SpawnFailed(f"{type(exc).__name__}: {exc}") from exc
        return child.pid


@contextmanager
def _output(request: SpawnRequest) -> Iterator[int]:
    """The child's stdout: the descriptor the store opened, else `log_path` opened for appending."""
    if request.stdout is not None:
        yield request.stdout
        return
    fd = os.open(request.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        yield fd
    finally:
        os.close(fd)
