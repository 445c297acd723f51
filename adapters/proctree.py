"""The processes of a run, from /proc: standard library only (the lean supervisor imports it too).

A run is every process its work started. An agent CLI starts its shell tool in a
session of its own, so the runner's session alone misses it; what still ties such a process to
the run is
- ancestry: the runner and the lean supervisor are child subreapers (`become_subreaper`), so a
  process whose parent exits is re-parented to the run's head instead of to init, and every
  process the work started stays a descendant of the run's pid while that pid lives;
- the tag: the run's id in the environment the kernel kept at exec (`/proc/PID/environ`,
  `LI_RUN_ID=<run>`), which a process of another user cannot read and no process can rewrite
  after its exec — what still names the work when the run's head is gone.

Nothing here trusts a pid for long: a process is named by (pid, start ticks), and it is
signalled through a pidfd opened first and re-checked against that start (`signal_all`), so a
pid reused in between is never hit. Zombies count as gone.
"""

from __future__ import annotations

import _thread
import os

TYPE_CHECKING = False  # typing is not imported at run time: the lean supervisor holds every import
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from typing import Any

    Stat = tuple[str, int, int, int, int]  # state, ppid, pgrp, session, start ticks

PR_SET_CHILD_SUBREAPER = 36

# Children this process waits for itself from another thread (adapters/broker.py): a reaper of
# adopted orphans leaves them, and holds `reaping` while it looks, so none is added meanwhile.
reaping = _thread.allocate_lock()
spawned: set[int] = set()


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux prctl; kept across exec); False where it cannot be."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError, ImportError):
        return False


def name_process(role: str, run_id: str) -> bool:
    """Put the run in this process's name, as `ps -o comm` and `top` show it (`li-run-c3406e`):
    /proc/self/comm, the name prctl(PR_SET_NAME) sets, at most 15 bytes. Best effort;
    an exec gives the next program its own name, so each of li's processes of a run says it again.

    No whitespace: Slurm's proctrack/cgroup reads a process's parent from
    /proc/PID/stat with `sscanf("%*d %*s %*s %d")`, so a name with spaces hides that the runner
    is slurmstepd's child, and the runner then gets only the SIGKILL of a cancel or a time
    limit, never the SIGTERM that lets it record the end."""
    name = f"li-{role}-{run_id[-6:]}"[:15]
    try:
        fd = os.open("/proc/self/comm", os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, name.encode("ascii", "replace"))
        finally:
            os.close(fd)
    except OSError:
        return False
    return True


def stat_of(pid: str) -> Stat | None:
    """(state, ppid, pgrp, session, start ticks) of /proc/<pid>/stat, or None when it is gone."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)  # unbuffered: a scan reads hundreds
        try:
            raw = os.read(fd, 4096)
        finally:
            os.close(fd)
        fields = raw.rsplit(b")", 1)[1].split()
        return fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19])
    except (OSError, IndexError, ValueError, UnicodeDecodeError):
        return None


def table() -> Iterator[tuple[int, Stat]] | None:
    """Every process /proc shows, with its stat; None when /proc cannot be listed."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    return ((int(entry), stat) for entry in entries
            if entry.isdigit() and (stat := stat_of(entry)) is not None)


def environment(pid: int) -> list[bytes] | None:
    """The environment the kernel kept at the process's exec (`NAME=value` entries), or None when
    it cannot be read (gone, or another user's)."""
    try:
        fd = os.open(f"/proc/{pid}/environ", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        parts = []
        while True:
            part = os.read(fd, 1 << 16)
            if not part:
                break
            parts.append(part)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(parts).split(b"\0")


def carries(pid: int, tag: bytes) -> bool:
    """True when the environment the kernel kept at the process's exec holds `tag` (`NAME=value`)."""
    found = environment(pid)
    return found is not None and tag in found


def kin(head: int, parents: Iterable[tuple[int, int]]) -> set[int]:
    """The descendants of `head`, from (pid, parent pid) pairs. Every one is the run's, whatever
    its environment says: a process of the work that names another run (LI_RUN_ID=other) is still
    the work's, or the work could hide a process from the run's stop by renaming it. (So the
    runner of a run the work submits with the store in reach, re-parented here once its
    submitter exits, is counted too: known, see docs/architecture.md.)"""
    children: dict[int, list[int]] = {}
    for pid, ppid in parents:
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = list(children.get(head, ()))
    while todo:
        pid = todo.pop()
        if pid in found or pid == head:
            continue
        found.add(pid)
        todo.extend(children.get(pid, ()))
    return found


def zombie(state: str) -> bool:
    return state in ("Z", "X")


BROKER_MARK = b"LI_BROKER_MARK="  # what the run's broker starts carries it (adapters/broker.py)


def run_processes(head: int, tag: bytes | None, since: int = 0, cut: bytes | None = None,
                  rows: Iterable[tuple[int, Stat]] | None = None) -> dict[int, int] | None:
    """The live processes of a run other than `head`: pid -> start ticks. Each is a descendant of
    `head`, or carries `tag` and started at or after `since` ticks. What the run's broker started
    for its work (`brokered`, with `cut` the broker's mark) is no process of the run, nor is what
    it started. `rows`: the process table already read (else /proc is read). None when /proc is
    unreadable."""
    if rows is None:
        rows = table()
        if rows is None:
            return None
    stats = {pid: stat for pid, stat in rows if not zombie(stat[0])}
    parents = [(pid, stat[1]) for pid, stat in stats.items()]
    family = kin(head, parents)
    if cut is not None:
        for pid in [pid for pid in family if brokered(pid, stats[pid], head, cut)]:
            family.discard(pid)
            family -= kin(pid, parents)
    found = {pid: stats[pid][4] for pid in family}
    if tag is not None:
        found.update(_tagged(stats, tag, since, found.keys() | {head, os.getpid()}))
    return found


def _tagged(stats: dict[int, Stat], tag: bytes, since: int, but: set[int]) -> dict[int, int]:
    """The processes (but `but`) that carry `tag` and started at or after `since` ticks."""
    return {pid: stat[4] for pid, stat in stats.items()
            if pid not in but and stat[4] >= since and carries(pid, tag)}


def brokered(pid: int, stat: Stat, head: int, cut: bytes) -> bool:
    """Whether the head's descendant `pid` is what a broker started for a work (a child run's
    detached runner, adapters/broker.py): it leads a session of its own, lives in the head's
    mount namespace (a confined work never does: it cannot return there) and carries a broker's
    mark — any broker's when `cut` is `BROKER_MARK` alone, as every stop of a confined run asks:
    a grandchild run, started by a child's broker, is re-parented to this head once the child's
    head has ended, and carries the child's mark, not this head's."""
    if stat[3] != pid:
        return False
    found = environment(pid)
    if found is None:
        return False
    marked = any(entry.startswith(cut) for entry in found) if cut == BROKER_MARK else cut in found
    return marked and _mount_namespace(pid) == _mount_namespace(head) is not None


def _mount_namespace(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return None


def kill_group(pgid: int, signum: int) -> bool:
    """Signal a process group this process started; whether something was there (a group that is
    there but not ours to signal counts). The one process-group signal of li's stops."""
    if pgid <= 1:
        return False  # 0 is the caller's own group, 1 is init's: never a run's
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False  # an impossible group (EINVAL): nothing was signalled
    return True


# Seconds a process of the run found alive after the leg's own process ended has to be gone before
# it counts as left running: the leg's own forks between the supervisor and the work (the
# confinement's, the PID namespace's init) end a moment after the leg, and one caught mid-exit
# (its memory already released, not yet a zombie) is no stray.
SETTLE = 0.25


def left_running(find: Callable[[], dict[int, int]], settle: float = SETTLE) -> dict[int, int]:
    """What `find` (a scan of the run's processes) names once it names nothing, or else after
    `settle` seconds, scanning every 20 ms. Each look is a whole scan: a stray that forked on its
    way out (a double fork) is still found in its child."""
    import time

    left = find()
    deadline = time.monotonic() + settle
    while left and time.monotonic() < deadline:
        time.sleep(0.02)
        left = find()
    return left


class RunTree:
    """The processes of a run as its head (the full runner, or the lean supervisor in its place)
    sees them: every process of the run besides the head (`run_processes`: its descendants, what
    carries the run's tag), less what the run's broker started for its work (`cut`: the broker's
    mark, set once the broker is up). The one home of a run's stops: `li job kill` scans the same
    way from outside (`adapters/processes.py`), with the broker's cut where the work was confined."""

    def __init__(self, tag: bytes | None, cut: bytes | None = None) -> None:
        self.head = os.getpid()
        own = stat_of(str(self.head))
        self.since = own[4] if own is not None else 0
        self.tag = tag
        self.cut = cut

    def alive(self) -> dict[int, int]:
        return run_processes(self.head, self.tag, self.since, self.cut) or {}

    def signal(self, signum: int, groups: Iterable[int] = ()) -> None:
        """The process groups of the run's legs first (a leg's own process included), then every
        other process of the run, each verified (`signal_all`)."""
        for pgid in groups:
            kill_group(pgid, signum)
        signal_all(self.alive(), signum)


def stop_group(child: Any, grace: float, then_kill: bool = False) -> int:
    """Stop a process group this process started (`child`: its leader, a `subprocess.Popen`):
    SIGTERM, then SIGKILL after `grace` seconds if its leader still lives (and at once when
    `then_kill`: what the leader left in its group goes too); its leader's exit status."""
    import signal
    import subprocess

    kill_group(child.pid, signal.SIGTERM)
    try:
        code: int | None = child.wait(grace)
    except subprocess.TimeoutExpired:
        code = None
    if code is None or then_kill:
        kill_group(child.pid, signal.SIGKILL)
    return int(child.wait()) if code is None else code


def signal_all(found: dict[int, int], signum: int) -> int:
    """Signal each (pid, start ticks) still that very process, through a pidfd; how many were."""
    import signal  # only a stop signals: its enums are not a read's to pay

    sent = 0
    for pid, start in found.items():
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            continue  # gone already (or no pidfds: nothing is signalled unverified)
        try:
            now = stat_of(str(pid))
            if now is None or zombie(now[0]) or now[4] != start:
                continue
            signal.pidfd_send_signal(pidfd, signum)
            sent += 1
        except OSError:
            continue
        finally:
            os.close(pidfd)
    return sent


def reap_children() -> list[tuple[int, int]]:
    """Collect every ended child of this process (adopted orphans come here as a subreaper's) but
    those a thread waits for itself (`spawned`): the (pid, wait status) of each."""
    with reaping:
        return _reap_each_but(spawned) if spawned else _reap_all()


def _reap_all() -> list[tuple[int, int]]:
    done: list[tuple[int, int]] = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return done
        if pid == 0:
            return done
        done.append((pid, status))


def _reap_each_but(spare: set[int]) -> list[tuple[int, int]]:
    """The ended children not in `spare`, each collected by its pid (never `waitpid(-1)`)."""
    me, done = os.getpid(), []  # type: tuple[int, list[tuple[int, int]]]
    for pid, stat in table() or ():
        if stat[1] != me or not zombie(stat[0]) or pid in spare:
            continue
        try:
            found, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue
        if found:
            done.append((found, status))
    return done


def reap_adopted(spare: set[int]) -> int:
    """Collect the ended children of this process that are not in `spare` (the children another
    part of it waits for itself, such as a `subprocess.Popen`'s): how many were."""
    with reaping:
        return len(_reap_each_but(spare | spawned))
