"""The lean supervisor: what a one-leg run's runner becomes while its work runs.

    python -I -S <this file> SPEC_FD

The runner reads the request, plans the leg and prepares its process (`adapters.supervision`),
then exec's this file in its own place: the same pid, so the same session leader and the same
incarnation. This file imports the standard library only (nothing of lionrun, no site), so the
process that waits on the work holds about 10 MB instead of the full runner's 20–30 MB.

While the work runs it:
- starts the leg's process in its own process group, stdin from the prepared text (else
  /dev/null), stdout and stderr through pipes;
- copies both to the run's console (fd 1) in whole lines, and stdout to the capture descriptor
  (the answer and the agent's event stream, parsed after the end); li's own lines (a kill seen,
  the idle stop, leftover processes, a failed start) go to the run's li log (fd 2, which the
  runner pointed there before the exec), never into the console: that is the work's bytes alone;
- is a child subreaper (`adapters/proctree.py`), so what the leg starts in a session of its own
  (an agent's shell tool) stays its descendant;
- on SIGTERM (li job kill, scancel) or a kill request recorded in the run's record.json (li job
  kill from another host), SIGTERMs the leg's group and every other process of the run (its
  descendants, and what carries the run's LI_RUN_ID), and SIGKILLs them after a grace;
- at the timeout does the same and notes it timed out; likewise when an agent leg wrote nothing
  for its idle timeout (notes it `idle`);
- once the leg's own process ended, stops whatever of the run still lives the same way, so none
  outlives the end;
- after the leg's process ended (and its pipes closed, or a few seconds passed), exec's the full
  runner in finishing mode (`entrypoints.runner --finish`), which writes the answer, collects the
  artifacts, writes the manifest and records the end, as the runner always did.

The spec (JSON in an anonymous file, SPEC_FD) is written by `adapters.supervision`; the record is
read through the run folder's descriptor, never through a link, never blocking, bounded in size.
"""

from __future__ import annotations

import json
import os
import select
import signal
import stat
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # proctree, the one stdlib-only sibling
import proctree  # noqa: E402 - the path comes first

confinement = None  # adapters/confinement.py, imported (ctypes with it) only for a confined leg

TYPE_CHECKING = False  # typing is not imported at run time: every import here is memory held
if TYPE_CHECKING:
    from typing import Any

    Spec = dict[str, Any]

CHUNK = 1 << 16
LI_LOG = 2  # the runner made its stderr the run's li log; kept across the exec
LINE_MAX = 1 << 20  # a partial line held longer than this goes to the console as it is

_terms: list[int] = []


def _on_term(signum: int, frame: object) -> None:
    _terms.append(signum)


def _on_child(signum: int, frame: object) -> None:
    """Nothing: the wake-up descriptor already woke the loop."""


def _write_all(fd: int, data: bytes) -> bool:
    """Best effort: a console that cannot be written (a full disk) never stops the supervision."""
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        return False
    return True


def _read_all(fd: int, limit: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    while size <= limit:
        part = os.read(fd, CHUNK)
        if not part:
            break
        parts.append(part)
        size += len(part)
    return b"".join(parts)


class Lines:
    """One stream to the console in whole lines (a longer partial line goes as it is)."""

    def __init__(self, console: int) -> None:
        self.console = console
        self.held = b""

    def feed(self, data: bytes) -> None:
        data = self.held + data
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(data) <= LINE_MAX:
            self.held = data
            return
        if cut == 0:
            cut = len(data)
        self.held = data[cut:]
        _write_all(self.console, data[:cut])

    def close(self) -> None:
        if self.held:
            _write_all(self.console, self.held)
            self.held = b""


class KillWatch:
    """A kill request recorded in the run's record (`name` in the run folder), read through the
    folder's descriptor (never a link, never a FIFO, at most `limit` bytes), only when it changed."""

    def __init__(self, folder: int | None, interval: float | None, name: str, limit: int) -> None:
        self.folder = folder
        self.interval = interval if folder is not None and interval and interval > 0 else None
        self.name, self.limit = name, limit
        self.seen: tuple[int, int, int] | None = None

    def requested(self) -> bool:
        if self.interval is None or self.folder is None:
            return False
        try:
            info = os.stat(self.name, dir_fd=self.folder, follow_symlinks=False)
        except OSError:
            return False
        key = (info.st_ino, info.st_mtime_ns, info.st_size)
        if key == self.seen or not stat.S_ISREG(info.st_mode) or info.st_size > self.limit:
            return False
        self.seen = key
        try:
            fd = os.open(self.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=self.folder)
        except OSError:
            return False
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return False
            record = json.loads(_read_all(fd, self.limit))
        except Exception:  # noqa: BLE001 - whatever the record holds, not seeing a request is the answer
            return False
        finally:
            os.close(fd)
        return isinstance(record, dict) and bool(record.get("kill_requested_at"))


def _start(spec: Spec, out_w: int, err_w: int, report: int) -> int:
    """Fork the leg's process: own group, default signals, its cwd, stdin, pipes, only its own
    descriptors; exec its argv (searched on its env's PATH). A failure before the exec is written
    to `report` as "<errno> <what>" and the child exits 127."""
    argv, env, keep = spec["argv"], spec["env"], set(spec["pass_fds"])
    parent = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    what = "cwd"
    own_pids = False
    try:
        confine = spec.get("confine")
        if confine:  # first: the user namespace's new credentials would clear the death signal
            what = "confine"
            own_pids = confinement.confine(  # type: ignore[attr-defined]
                confine["home"], confine["artifacts"] or None, confine.get("marker") or None,
                confine.get("broker") or None, json.loads(confine.get("protect") or "[]"), bool(confine.get("pids")))
            what = "cwd"
        if spec.get("die_with_runner"):
            _die_with(parent)
        os.setpgid(0, 0)
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        for signum in (signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(signum, signal.SIG_DFL)  # Python ignores these; the work must not
        if own_pids:  # from here on, pid 2 of the run's own PID namespace
            what = "pids"
            confinement.own_pids(bool(spec.get("die_with_runner")))  # type: ignore[attr-defined]
            what = "cwd"
        os.chdir(spec["cwd"])
        what = "exec"
        _set_descriptors(spec["stdin_fd"], out_w, err_w, keep, report)
        os.execvpe(argv[0], argv, env)
    except BaseException as exc:  # noqa: BLE001 - the child only reports and leaves
        number = getattr(exc, "errno", None) or 0
        try:
            os.write(report, f"{number} {what}".encode())
        finally:
            os._exit(127)
    raise AssertionError("unreachable")


def _set_descriptors(stdin: int | None, out_w: int, err_w: int, keep: set[int], report: int) -> None:
    """In the leg's child: stdin (else /dev/null), the two pipes, and of the rest only `keep`
    (inheritable) and `report` (closed at the exec)."""
    if stdin is None:
        stdin = os.open(os.devnull, os.O_RDONLY)
    os.dup2(stdin, 0)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    top = 3  # every other descriptor closed: the run folder's, the capture's, the spec's
    for fd in sorted(keep | {report}):
        os.closerange(top, fd)
        top = fd + 1
    os.closerange(top, max(top, os.sysconf("SC_OPEN_MAX")))
    for fd in keep:
        os.set_inheritable(fd, True)


def _die_with(parent: int) -> None:
    """In the leg's child: be SIGKILLed when this supervisor dies (PR_SET_PDEATHSIG), so that a
    queued run's slot, which the kernel frees when the supervisor dies, frees no slot whose work
    still runs. ctypes is loaded in the child only, which exec's the leg next."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the supervisor died before the request took
        os._exit(127)


def _failed_start(spec: Spec, report: bytes) -> str:
    """The li log line of a leg that could not be started, as the in-process runner says it."""
    number, _, what = report.decode("ascii", "replace").partition(" ")
    code = int(number) if number.isdigit() else 0
    name = {"cwd": spec["cwd"], "confine": "the store could not be hidden"}.get(what, spec["argv"][0])
    return f"li runner: could not start {spec['argv'][0]}: [Errno {code}] {os.strerror(code)}: {name!r}\n"


def _arm_signals() -> int:
    """SIGTERM noted, SIGCHLD and SIGTERM wake the loop through the descriptor returned; a SIGTERM
    kept pending until now arrives here."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGCHLD, _on_child)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGTERM,))  # a SIGTERM kept pending arrives now
    return wake_r


def _launch(spec: Spec) -> tuple[int, int, int, bytes]:
    """Start the leg; (its pid, its stdout and stderr pipes, the report of a failed start or b"")."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    report_r, report_w = os.pipe()
    pid = _start(spec, out_w, err_w, report_w)
    for fd in (out_w, err_w, report_w, *spec["pass_fds"]):
        os.close(fd)
    if spec["stdin_fd"] is not None:
        os.close(spec["stdin_fd"])
    report = _read_all(report_r, 4096)
    os.close(report_r)
    return pid, out_r, err_r, report


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except (BlockingIOError, InterruptedError):
        pass


class LegWatch:
    """The watch over a started leg, one turn of the loop at a time: its output pumped to the
    console, its stops (SIGTERM, a recorded kill request, the timeout, the idle timeout) and, once
    its own process ended, what of the run it left running."""

    def __init__(self, spec: Spec, pid: int, out_r: int, err_r: int, wake_r: int, began: float) -> None:
        self.spec, self.pid, self.out_r, self.wake_r = spec, pid, out_r, wake_r
        self.capture = spec["capture_fd"]
        self.watch = KillWatch(spec["folder_fd"], spec["kill_watch"], spec["record"], spec["record_max_bytes"])
        self.streams = {out_r: Lines(1), err_r: Lines(1)}
        # The broker's socket (a confined leg): watched here until the work first asks, then
        # answered by the broker's threads; a run whose work never asks loads none of it.
        confine = spec.get("confine") or {}
        self.broker_fd = int(confine["broker_fd"]) if confine.get("broker_fd") else None
        if self.broker_fd is not None:
            os.set_inheritable(self.broker_fd, False)  # never into the finisher
        tag, mark = spec.get("run_tag"), confine.get("mark")
        self.tree = proctree.RunTree(tag.encode() if tag else None, proctree.BROKER_MARK if mark else None)
        timeout = spec["timeout"]
        self.deadline = None if timeout is None else began + timeout
        self.idle_for = spec.get("idle_timeout")  # an agent CLI that writes nothing this long is stopped
        self.heard = began  # when the leg last wrote anything, on either stream (its own retry lines count)
        self.idle = False
        self.status: int | None = None
        self.timed_out = self.cancelled = False
        self.kill_at: float | None = None
        self.drain_until = 0.0
        self.next_look = began + (self.watch.interval or 0.0)
        self.grace = float(spec["kill_grace"])
        self.left: dict[int, int] = {}  # what of the run still lived after the leg's own process ended
        self.left_stopped = self.left_killed = False
        self.give_up = 0.0

    def turn(self) -> bool:
        """One turn of the loop; True once the supervision is over."""
        now = time.monotonic()
        self._reap(now)
        if self.status is not None and self._ended(now):
            return True
        self._on_term(now)
        if self.status is None:
            self._look_for_kill_request(now)
            self._on_limits(now)
        self._pump(self._wait(now))
        return False

    def outcome(self, began: float) -> tuple[int | None, str, bool, float]:
        """Close the streams; what `supervise` answers."""
        for fd, lines in self.streams.items():
            lines.close()
            os.close(fd)
        assert self.status is not None  # the loop ends only after the leg's own process ended
        timed_out = "idle" if self.idle else str(int(self.timed_out))
        return os.waitstatus_to_exitcode(self.status), timed_out, self.cancelled, began

    def _stop(self, now: float) -> float:
        self.tree.signal(signal.SIGTERM, (self.pid,))
        return now + self.grace

    def _reap(self, now: float) -> None:
        for child, raw in proctree.reap_children():  # the leg, and orphans of the run adopted here
            if child == self.pid and self.status is None:
                self.status, self.drain_until = raw, now + self.spec["pump_join"]

    def _ended(self, now: float) -> bool:
        """After the leg's own process ended: stop what of the run still lives (none may outlive its
        end); True once none does and the output is drained (or its time is up)."""
        self.left = self.tree.alive() if self.left_stopped else proctree.left_running(self.tree.alive)
        if self.left:
            self._end_left(self.left, now)
        return not self.left and (not self.streams or now >= self.drain_until)

    def _end_left(self, left: dict[int, int], now: float) -> None:
        """SIGTERM what the work left running, SIGKILL it a grace later, give up on it after that."""
        if not self.left_stopped:
            self._stop_left(left, now)
        if not self.left_killed and self.kill_at is not None and now >= self.kill_at:
            self.left_killed = True
            proctree.signal_all(left, signal.SIGKILL)
        if self.left_stopped and now >= self.give_up:
            _write_all(LI_LOG, f"li runner: {len(left)} process(es) of the work could not be stopped: "
                          f"{' '.join(map(str, sorted(left)))}\n".encode())
            self.left = {}

    def _stop_left(self, left: dict[int, int], now: float) -> None:
        self.left_stopped, self.give_up = True, now + self.grace + self.spec["pump_join"]
        _write_all(LI_LOG, f"li runner: stopping {len(left)} process(es) the work left running\n".encode())
        proctree.signal_all(left, signal.SIGTERM)
        self.kill_at = now + self.grace if self.kill_at is None else min(self.kill_at, now + self.grace)

    def _on_term(self, now: float) -> None:
        if _terms and not self.cancelled:  # li job kill signals the work too: it may have ended first
            self.cancelled = True
            if self.status is None:
                self.kill_at = self._stop(now)

    def _look_for_kill_request(self, now: float) -> None:
        if self.cancelled or self.watch.interval is None or now < self.next_look:
            return
        self.next_look = now + self.watch.interval
        if self.watch.requested():
            _write_all(LI_LOG, self.spec["kill_seen"].encode())
            self.cancelled, self.kill_at = True, self._stop(now)

    def _on_limits(self, now: float) -> None:
        """The timeout, the idle timeout, and the SIGKILL a grace after a stop (the leg still runs)."""
        counting = not self.timed_out and not self.cancelled
        if self.deadline is not None and counting and now >= self.deadline:
            self.timed_out, self.kill_at = True, self._stop(now)
        elif self.idle_for and counting and now - self.heard >= self.idle_for:
            _write_all(LI_LOG, self.spec["idle_said"].format(seconds=self.idle_for).encode())
            self.timed_out = self.idle = True
            self.kill_at = self._stop(now)
        if self.kill_at is not None and now >= self.kill_at:
            self.tree.signal(signal.SIGKILL, (self.pid,))
            self.kill_at = None

    def _wait(self, now: float) -> float:
        """How long the next poll may wait, in seconds: until the next thing to do, at most 1 s."""
        if self.status is not None:
            return max(0.0, min(1.0, 0.05 if self.left else self.drain_until - now))
        waits = [1.0]
        if self.kill_at is not None:
            waits.append(self.kill_at - now)
        counting = not self.timed_out and not self.cancelled
        if self.deadline is not None and counting:
            waits.append(self.deadline - now)
        if self.idle_for and counting:
            waits.append(self.heard + self.idle_for - now)
        if self.watch.interval is not None and not self.cancelled:
            waits.append(self.next_look - now)
        return max(0.0, min(waits))

    def _pump(self, wait: float) -> None:
        poller = select.poll()  # not select(): a descriptor above 1023 is fine here
        for fd in (*self.streams, self.wake_r, *(() if self.broker_fd is None else (self.broker_fd,))):
            poller.register(fd, select.POLLIN)
        for fd, _ in poller.poll(wait * 1000):
            if fd == self.wake_r:
                _drain(fd)
            elif fd == self.broker_fd:
                self.broker_fd = None
                _serve_the_work(self.spec)
            else:
                self._read(fd)

    def _read(self, fd: int) -> None:
        data = os.read(fd, CHUNK)
        self.heard = time.monotonic()
        if not data:
            self.streams.pop(fd).close()
            os.close(fd)
            return
        self.streams[fd].feed(data)
        if fd == self.out_r:
            _write_all(self.capture, data)


def supervise(spec: Spec) -> tuple[int | None, str, bool, float]:
    """Start and watch the leg; (exit code or None when never started, timed out: "0", "1" or
    "idle" (stopped by the idle watchdog), cancelled, when the leg began on the monotonic clock)."""
    wake_r = _arm_signals()
    began = time.monotonic()
    if _terms:
        return None, "0", True, began
    pid, out_r, err_r, report = _launch(spec)
    if report:
        os.waitpid(pid, 0)
        os.close(out_r)
        os.close(err_r)
        _write_all(LI_LOG, _failed_start(spec, report).encode())
        return 127, "0", False, began
    run = LegWatch(spec, pid, out_r, err_r, wake_r, began)
    while not run.turn():
        pass
    return run.outcome(began)


def _serve_the_work(spec: Spec) -> None:
    """Answer what the confined work asks of the store through `li` (adapters/broker.py), on the
    socket the runner opened and its exec kept open: from the work's first request on (the leg
    is forked already, so no thread is copied into it)."""
    confine = spec["confine"]
    import socket

    import broker  # noqa: PLC0415 - only a supervisor whose work asks pays for it

    sock = socket.socket(fileno=int(confine["broker_fd"]))
    env = broker.environment(os.environ, confine["run_id"], confine["mark"])
    broker.serve(sock, confine["run_id"], json.loads(confine["li"]), env)


def main(argv: list[str]) -> int:
    proctree.become_subreaper()  # the runner made itself one; kept across its exec, said again here
    spec_fd = int(argv[1])
    os.lseek(spec_fd, 0, os.SEEK_SET)
    spec = json.loads(_read_all(spec_fd, 1 << 26))
    os.close(spec_fd)
    proctree.name_process("sup", str(spec["run_id"]))  # `ps`/`top` name the run (argv[2] is its id too)
    if spec.get("confine"):
        global confinement
        import confinement  # noqa: PLC0415 - only a confined leg pays for ctypes
    try:
        code, timed_out, cancelled, leg_began = supervise(spec)
    except Exception as exc:  # noqa: BLE001 - a fault here still ends in a recorded end, never a lost run
        _write_all(LI_LOG, f"li runner: the supervision failed: {type(exc).__name__}: {exc}\n".encode())
        code, timed_out, cancelled, leg_began = 70, "0", False, time.monotonic()
    signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGTERM,))  # from here on the finisher records the end
    cancelled = cancelled or bool(_terms)  # a SIGTERM before the end is recorded cancels, as in the runner
    if spec["folder_fd"] is not None:
        os.close(spec["folder_fd"])
    confine = spec.get("confine") or {}
    if confine.get("mark"):  # the finisher's last stop spares the brokers' children too
        os.environ["LI_BROKER_CUT"] = proctree.BROKER_MARK.decode()
    finish = [*spec["finish"], "--finish", spec["run_id"], str(spec["capture_fd"]),
              "-" if code is None else str(code), timed_out, str(int(cancelled)),
              repr(spec["began"]), repr(leg_began)]
    try:
        os.execv(finish[0], finish)
    except OSError as exc:
        _write_all(LI_LOG, f"li runner: the end could not be recorded: the finisher did not start: {exc}\n".encode())
    return 70


if __name__ == "__main__":
    sys.exit(main(sys.argv))
