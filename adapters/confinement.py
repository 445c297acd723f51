"""The store hidden from the work: what a run's leg process does between fork and exec.

Standard library only (ctypes): the lean supervisor (`adapters/supervisor.py`, `python -I -S`)
imports it as a sibling, as it does `proctree`; the full runner's legs call the same `confine`
as their `Popen` pre-exec step.

In the forked child, before the exec of the work:

1. a mount namespace of its own: `unshare(CLONE_NEWNS)` as root; `unshare(CLONE_NEWUSER |
   CLONE_NEWNS)` otherwise, the user's own uid and gid mapped to themselves (so files, `id` and
   `$HOME` look as they did), `setgroups` denied as the kernel requires;
2. every mount made private (nothing propagates back out), then a read-only empty tmpfs over
   `$LI_HOME`, with the run's own `artifacts/` bound back at its place (read-write): the work
   can reach nothing else of the store — no other run's record, console or prompt, not its own
   record, request or instruction;
3. in a worktree run, the repository's shared `config`, `hooks/` and `info/` bound read-only;
4. where the kernel allows, a PID namespace of the work's own (`own_pids`): the run's
   end is the namespace's end, and the work sees no process outside it by pid. `/proc` stays
   the host's, so liveness and the run tree read it as before;
5. nothing else: no Landlock domain (a process in one may make no mount at all, which breaks
   bwrap inside the work).

A non-root work has no capability left in its user namespace after its exec, so it can neither
unmount the tmpfs nor make mounts; one that makes namespaces of its own (bwrap, a nested
sandbox) gets copies of these mounts, which the kernel locks together. Being in a user namespace
of its own, it cannot open `/proc/PID/root` (or `cwd`, `fd`, `environ`) of a process outside it,
which would lead around the tmpfs into another process's view of the store (measured: EACCES).
Root's work keeps root's powers (no user namespace, which would cost it its rights over other
users' files), so a root that means to can unmount the tmpfs or walk `/proc/1/root`: for root
this hides the store from the work's reach by accident or habit, it cannot wall it off.

The session, environment (the `LI_RUN_ID` tag) and the leg's process group (the relay outside
the PID namespace, which passes signals on) are as before.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os

try:
    from lionrun.adapters import proctree
except ImportError:  # the lean supervisor: no package, its siblings on sys.path
    import proctree  # type: ignore[no-redef]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

STORE_HIDDEN = "store_hidden"
NONE = "none"

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
PR_SET_PDEATHSIG = 1
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_DUMPABLE = 4
O_PATH = getattr(os, "O_PATH", 0o10000000)

_libc: Any = None


class Refused(OSError):
    """The kernel would not confine the work; `what` names the step."""

    def __init__(self, what: str, number: int) -> None:
        super().__init__(number, f"{what}: {os.strerror(number) if number else 'refused'}")
        self.what = what


def _lib() -> Any:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                                ctypes.c_void_p)
        _libc.syscall.restype = ctypes.c_long
    return _libc


def load() -> None:
    """Load libc's handle in this process, before a fork whose child calls `confine`: a child of a
    process with threads must not run the dynamic loader."""
    _lib()


def _check(result: int, what: str) -> int:
    if result < 0:
        raise Refused(what, ctypes.get_errno())
    return result


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(value: str | None) -> bytes | None:
        return None if value is None else value.encode()

    _check(_lib().mount(enc(source), enc(target), enc(fstype), flags,
                        None if data is None else ctypes.c_char_p(data.encode())), f"mount {target}")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


# statvfs's f_flag bits -> the mount flags a read-only bind must keep (a user namespace may not
# clear a flag its mount was locked with: nosuid, nodev, noexec, the atime ones)
_KEPT = ((2, MS_NOSUID), (4, MS_NODEV), (8, 8), (1024, 1024), (2048, 2048), (4096, 1 << 21))


def _read_only(path: str) -> None:
    """Bind `path` onto itself, read-only, in this mount namespace: the work cannot write it (and
    cannot rename anything onto it, a mount point), everyone outside still can."""
    try:
        flags = os.statvfs(path).f_flag
    except OSError:
        return  # gone, or never there: nothing to keep read-only
    _mount(path, path, None, MS_BIND)
    kept = 0
    for bit, flag in _KEPT:
        if flags & bit:
            kept |= flag
    _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept)


def confine(home: str, artifacts: str | None, marker: str | None = None, broker: str | None = None,
            protect: Sequence[str] = (), pids: bool = False) -> bool:
    """Hide `home` from this process and what it execs, `artifacts` (inside it) left reachable;
    the `marker` file, left in the hidden `home`, holds the name of the run's `broker` socket.
    Call in a forked, single-threaded child. Raises Refused (an OSError) when the kernel refuses a
    step; the process is then in an unknown state of confinement and must not run the work as if
    confined (the caller decides: exit, or — having said so — run unconfined in a fresh fork)."""
    home = os.path.realpath(home)
    keep = None
    inside = None
    real = os.path.realpath(artifacts) if artifacts else None
    if real is not None and os.path.commonpath([real, home]) == home and real != home:
        inside = os.path.relpath(real, home)
    try:
        uid, gid = os.geteuid(), os.getegid()
        lib = _lib()
        flags = CLONE_NEWNS if uid == 0 else CLONE_NEWUSER | CLONE_NEWNS
        own_pids = pids and lib.unshare(flags | CLONE_NEWPID) == 0  # where the kernel allows
        if not own_pids:
            _check(lib.unshare(flags), "unshare")
        if uid != 0:
            # /proc/self is this process's to write only while it is dumpable (a process that
            # changed its uid is not, until its next exec)
            _check(lib.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl")
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", f"{uid} {uid} 1")
            _write("/proc/self/gid_map", f"{gid} {gid} 1")
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        if inside is not None and real is not None:  # opened in this namespace: a bind's source must be
            keep = os.open(real, O_PATH | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW)
        _mount("li-store-hidden", home, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700,size=64k,nr_inodes=64")
        if keep is not None and inside is not None:
            os.makedirs(os.path.join(home, inside), mode=0o700, exist_ok=True)
            _mount(f"/proc/self/fd/{keep}", os.path.join(home, inside), None, MS_BIND)
        if marker:  # how an `li` the work runs knows the store is hidden, not empty
            fd = os.open(os.path.join(home, marker), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o400)
            try:
                if broker:
                    os.write(fd, f"{broker}\n".encode())
            finally:
                os.close(fd)
        _mount(None, home, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        for path in protect:  # the person's repository's shared config, hooks, info
            _read_only(path)
    finally:
        if keep is not None:
            os.close(keep)
    return own_pids


# What the two processes between the supervisor and the work pass on to the work: a
# stop, a kill's first word, a hang-up, an interrupt; SIGKILL needs no passing (their deaths take
# the namespace), SIGSTOP is the work's own business.
_FORWARDED = (15, 2, 1, 3, 10, 12)  # SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2


def own_pids(die_with_parent: bool = False) -> None:
    """In the forked child that made a PID namespace (`confine(..., pids=True)`): returns only in
    the process that is to exec the work, pid 2 of the namespace in a process group of its own.

    The calling process (C) stays outside the namespace, where the supervisor sees it as the leg:
    it passes the signals it gets to the namespace's init and ends as the work ended (the same exit
    code, the same signal) as soon as the work's own process ended. Its child (D), pid 1 of the
    namespace, passes them on to the work's group, reaps what is orphaned in there, and ends once
    nothing is left: what the work left running is then the supervisor's to stop, as before (D is
    its descendant, the supervisor a subreaper), and once D is SIGKILLed the kernel kills whatever
    else lives in the namespace, so nothing the work started (a double fork, `setsid`, `env -i`,
    a new name) outlives the run. `die_with_parent` (a queued run's leg): D dies with C. Neither keeps a descriptor of the supervisor's (the
    report pipe of a failed start, the output pipes): a work that stops itself (`kill -STOP 0`,
    its group) stops neither, and the supervisor is not in the namespace for it to signal by pid.
    """
    import signal

    signal.set_wakeup_fd(-1)  # a supervisor's wake-up descriptor is not these processes' to write
    status_r, status_w = os.pipe()
    init = os.fork()
    if init:
        _relay_outside(init, status_r, status_w)
    os.close(status_r)
    if die_with_parent:  # C gone: the namespace goes (a queued run's slot frees no work that runs)
        _lib().prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    os.setpgid(0, 0)
    _own_proc()
    work = os.fork()
    if work == 0:
        os.close(status_w)
        os.setpgid(0, 0)
        return
    _init(work, status_w)


def _own_proc() -> None:
    """Pid 1 of the namespace mounts a /proc of the namespace over the host's, in the work's own
    mount namespace: the work's pids (`$$`, `getpid()`) then name its own processes in /proc, as
    they do for any process. The supervisor, outside, keeps the host's /proc. Where the kernel
    refuses (an unprivileged mount over a /proc with parts masked), the host's stays: the work
    runs, its /proc/PID paths then name host processes."""
    with contextlib.suppress(OSError):
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def _close_all_but(fd: int) -> None:
    os.closerange(0, fd)
    os.closerange(fd + 1, max(fd + 2, os.sysconf("SC_OPEN_MAX")))


def _forward_signals(send: Callable[[int, int], object], target: int) -> None:
    """Pass each signal of `_FORWARDED` on to `target` with `send` (`os.kill`, or `proctree.kill_group`),
    then unblock signals: what the namespace's init and C, outside it, do while the work runs."""
    import signal

    def forward(signum: int, frame: object) -> None:
        with contextlib.suppress(OSError):
            send(target, signum)

    for signum in _FORWARDED:
        signal.signal(signum, forward)
    signal.pthread_sigmask(signal.SIG_SETMASK, ())


def _init(work: int, status_w: int) -> None:
    """Pid 1 of the run's namespace: pass signals to the work's group, reap, end with the work."""
    _close_all_but(status_w)
    _forward_signals(proctree.kill_group, work)  # the one process-group signal
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(0)  # nothing of the work is left: the namespace ends
        if pid == work:
            with contextlib.suppress(OSError):
                os.write(status_w, str(status).encode())
            os.close(status_w)


def _relay_outside(init: int, status_r: int, status_w: int) -> None:
    """C: pass signals to the namespace's init, then end as the work ended."""
    import signal

    os.close(status_w)
    _close_all_but(status_r)
    _forward_signals(os.kill, init)
    said = b""
    while True:
        try:
            part = os.read(status_r, 64)
        except InterruptedError:
            continue
        if not part:
            break
        said += part
    own = 0
    if not said.strip().isdigit():  # the init died before the work's end was known: its own end
        with contextlib.suppress(ChildProcessError):
            _, own = os.waitpid(init, 0)
    status = int(said) if said.strip().isdigit() else own
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def entering(step: Callable[[], None], cwd: str) -> Callable[[], None]:
    """A `Popen` pre-exec step that confines first and only then enters `cwd`.

    `Popen(cwd=...)` enters its cwd *before* the pre-exec step runs: a process that entered a
    folder of the store and was then confined keeps a handle on the real folder under the hiding
    mount, and reads and writes the store through `.`. So the caller starts the child with no cwd
    of its own and this step enters it by path once the store is hidden: a path into the store
    then leads to the empty, read-only tmpfs."""

    def confine_then_enter() -> None:
        step()
        os.chdir(cwd)

    return confine_then_enter


def check_folder(cwd: str) -> None:
    """In the parent, before a fork whose child enters `cwd` after confining itself: the error
    `Popen(cwd=...)` would have raised (FileNotFoundError, NotADirectoryError...) for a folder
    that is not there, so it is said as before rather than as a failed pre-exec step."""
    import stat

    if not stat.S_ISDIR(os.stat(cwd).st_mode):
        raise NotADirectoryError(20, os.strerror(20), cwd)


class StoreHider:
    """The `Confiner` port over `confine`: the full runner's legs through their `Popen` pre-exec
    step (`ChildGroups.pre_exec`), the lean supervisor's from the spec `engage` returns."""

    def __init__(self, home: str, groups: Any = None, marker: str | None = None,
                 li: list[str] | None = None) -> None:
        self.home = home
        self.groups = groups
        self.marker = marker
        self.li = li  # the `li` command the run's head runs for the work (adapters/broker.py); None: none
        self._refusal: tuple[str | None] | None = None

    def refusal(self) -> str | None:
        if self._refusal is None:
            try:
                self._refusal = (probe(self.home),)
            except OSError as exc:
                self._refusal = (f"the confinement could not be tried: {exc}",)
        return self._refusal[0]

    def engage(self, artifacts: str | None, run_id: str, protect: Sequence[str] = ()) -> dict[str, str]:
        home, marker = self.home, self.marker
        guarded = shared_folders(protect)
        target = {"home": home, "artifacts": artifacts or "", "marker": marker or "", "protect": json.dumps(guarded)}
        name = None
        if self.li and marker:
            try:
                from lionrun.adapters import broker
            except ImportError:  # the lean supervisor: no package, its siblings on sys.path
                import broker  # type: ignore[no-redef]

            sock, name = broker.open_socket(run_id)
            mark = broker.new_mark()
            env = broker.environment(os.environ, run_id, mark)
            li = self.li
            if self.groups is not None:  # with the first leg here; a lean supervisor serves its own
                self.groups.on_first_leg = lambda: broker.serve(sock, run_id, li, env)
            else:
                broker.serve(sock, run_id, li, env)
            self._socket = sock  # held open for the legs' lifetime (and the lean supervisor's exec)
            os.set_inheritable(sock.fileno(), True)
            target.update(broker=name, broker_fd=str(sock.fileno()), mark=mark, run_id=run_id,
                          li=json.dumps(self.li))
            if self.groups is not None:
                self.groups.cut = f"{broker.MARK}=".encode()  # any broker's: a grandchild carries its parent's
        pids = own_pids_here(home)
        target["pids"] = "1" if pids else ""
        if self.groups is not None:
            def step() -> None:
                if confine(home, artifacts, marker, name, guarded, pids):
                    own_pids()

            self.groups.pre_exec = step
        return target

    def pids_refusal(self) -> str | None:
        """None when the work gets a PID namespace of its own here; else why not."""
        return None if own_pids_here(self.home) else PIDS_REFUSED


def shared_folders(paths: Sequence[str]) -> list[str]:
    """The paths to keep read-only, each made first where it is a missing folder of the person's
    repository (`hooks/`, `info/`: a work must not plant one where there was none): real paths,
    those that exist."""
    kept = []
    for path in paths:
        if path.endswith("/") and not os.path.lexists(path.rstrip("/")):
            try:
                os.mkdir(path.rstrip("/"), 0o755)
            except OSError:
                continue
        real = os.path.realpath(path.rstrip("/"))
        if os.path.exists(real):
            kept.append(real)
    return kept


# (the store's real path, this process's euid) the kernel was found to confine: a runner asks once
# for its legs (StoreHider) and once for its git (adapters/git.py), and a yes does not change
_CONFINES: set[tuple[str, int]] = set()


_OWN_PIDS: dict[tuple[str, int], bool] = {}
PIDS_REFUSED = "the kernel made no PID namespace for the work: its processes share the host's"


def own_pids_here(home: str) -> bool:
    """Whether a confined work gets a PID namespace of its own here (asked with the probe)."""
    key = (os.path.realpath(home), os.geteuid())
    if key not in _OWN_PIDS:
        probe(home)
    return _OWN_PIDS.get(key, False)


def probe(home: str) -> str | None:
    """Whether the kernel confines a work here: None when it does, else why not (one line).
    Forks a child that confines itself and exits; costs a fork, no exec, the first time only
    once it said yes (a refusal is asked again: the store may be made meanwhile)."""
    key = (os.path.realpath(home), os.geteuid())
    if key in _CONFINES:
        return None
    why, pids = _probe(home)
    if why is None:
        _CONFINES.add(key)
        _OWN_PIDS[key] = pids
    return why


def _probe(home: str) -> tuple[str | None, bool]:
    """(why the kernel does not confine, or None; whether it made a PID namespace too)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            code = 0 if confine(home, None, pids=True) else 2
        except BaseException as exc:  # noqa: BLE001 - the child only reports and leaves
            try:
                os.write(write, str(exc).encode()[:500])
            finally:
                code = 1
        os._exit(code)
    os.close(write)
    try:
        why = b""
        while True:
            part = os.read(read, 512)
            if not part:
                break
            why += part
    finally:
        os.close(read)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code in (0, 2):
        return None, code == 0
    return why.decode("utf-8", "replace") or "the kernel refused", False
