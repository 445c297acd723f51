"""The way a confined run's work still submits and reads its own child runs.

Standard library only: the lean supervisor (`python -I -S`) imports it as a sibling, as it does
`proctree` and `confinement`.

The work cannot see the store. Where the store is hidden from it, the run's head (the full runner,
or the lean supervisor in its place) listens on an abstract unix socket, whose name is the one line
of the marker file the confinement leaves in the hidden `$LI_HOME`. An `li` the work runs finds
that marker (`entrypoints/bootstrap.py`) and, instead of answering "the store is hidden", sends
its words, its working directory and its three standard descriptors (SCM_RIGHTS) to the socket.
For each request the head:

1. takes it only from a process of its own run: the peer's uid (SO_PEERCRED) is the head's, and
   its pid is a descendant of the head (the head is a child subreaper, so nothing the work started
   leaves its tree while the head lives). Another run's work, or another user, is refused;
2. runs `li` itself, outside the confinement, with the caller's descriptors and in its directory,
   but with the environment the run was submitted with (never the caller's: a work that chose the
   environment of a process outside its confinement, `LD_PRELOAD` or `PATH`, would be outside it),
   plus `LI_ACTING_FOR=<run id>`: that `li` lets the work submit runs (each recording this run as
   its `parent`, confined like it, no `--confine off`, no `--notify`, no `--setup`) and read, wait
   on and kill those children, nothing else (`entrypoints/acting.py`);
3. answers the exit status (`exit N`), and interrupts that `li` (SIGINT) when the caller leaves.

A child's detached runner is re-parented to this head (a subreaper) once the `li` that submitted
it exits (and a grandchild's, once the child's head has ended), and would count as this run's
process, stopped at its end. So what a head's broker starts carries a mark
(`LI_BROKER_MARK=<a secret of that head>`); a session leader in the head's own mount namespace
(where no confined work can be) carrying a broker's mark, and what it started, is no process of
this run (`proctree.run_processes`, `cut`).
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct

try:
    from lionrun.adapters import proctree
except ImportError:  # the lean supervisor: no package, its siblings on sys.path (one module either way)
    import proctree  # type: ignore[no-redef]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

PREFIX = "li-broker-"
MARK = "LI_BROKER_MARK"  # in what the head starts: the detached child runners are not the run's
ACTING = "LI_ACTING_FOR"  # the run an `li` acts for (entrypoints/acting.py)
REQUEST_MAX = 1 << 20  # the words and the directory of one request
AT_ONCE = 64  # requests answered at the same time; one more is refused (a work cannot pile up threads)
ANCESTRY_MAX = 4096  # how far up a peer's parents are walked
# What of the head's environment never reaches the `li` it runs for the work: the run's own tags
# (the child is another run) and the broker's (set afresh for each request).
DROPPED = ("LI_RUN_ID", "LI_LEG_ID", "LI_ARTIFACTS_DIR", MARK, ACTING)


def open_socket(run_id: str) -> tuple[socket.socket, str]:
    """A listening abstract socket for this run, and its name (without the leading NUL)."""
    name = f"{PREFIX}{run_id}-{os.urandom(8).hex()}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    sock.bind("\0" + name)
    sock.listen(16)
    return sock, name


def new_mark() -> str:
    return os.urandom(16).hex()


def environment(base: Mapping[str, str], run_id: str, mark: str) -> dict[str, str]:
    """The environment of an `li` run for the work: `base` (the head's) less the run's tags."""
    env = {k: v for k, v in base.items() if k not in DROPPED}
    env[ACTING] = run_id
    env[MARK] = mark
    return env


def serve(sock: socket.socket, run_id: str, li: Sequence[str], env: Mapping[str, str]) -> None:
    """Accept and answer requests on `sock` in daemon threads, until the process ends or execs."""
    import threading  # only a confined run's head pays for it

    slots = threading.BoundedSemaphore(AT_ONCE)

    def answer(conn: socket.socket) -> None:
        try:
            _answer(conn, run_id, li, env)
        finally:
            slots.release()

    def accept() -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return  # the socket was closed
            if not slots.acquire(blocking=False):
                with conn:
                    _say(conn, f"refused more than {AT_ONCE} requests at once")
                continue
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, name="li-broker", daemon=True).start()


def _answer(conn: socket.socket, run_id: str, li: Sequence[str], env: Mapping[str, str]) -> None:
    with conn:
        try:
            code = _request(conn, run_id, li, env)
        except Exception as exc:  # noqa: BLE001 - the caller gets a word, never a hang
            code = f"refused {type(exc).__name__}: {exc}"
        _say(conn, code)


def _say(conn: socket.socket, line: str) -> None:
    try:  # noqa: SIM105 - contextlib is memory the lean supervisor does not need
        conn.sendall(f"{line}\n".encode())
    except OSError:
        pass


def _request(conn: socket.socket, run_id: str, li: Sequence[str], env: Mapping[str, str]) -> str:
    pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                         struct.calcsize("3i")))
    if uid != os.geteuid() or not descends(pid, os.getpid()):
        return "refused the caller is no process of this run"
    conn.settimeout(10)
    data, fds = _receive(conn)
    try:
        if len(fds) != 3:
            return "refused the request did not carry stdin, stdout and stderr"
        request = json.loads(data)
        argv, cwd = request.get("argv"), request.get("cwd")
        if (not isinstance(argv, list) or not all(isinstance(a, str) for a in argv)
                or not isinstance(cwd, str) or not os.path.isabs(cwd)):
            return "refused the request is not {argv: [str], cwd: absolute path}"
        return f"exit {_run(conn, [*li, *argv], cwd, env, fds)}"
    finally:
        for fd in fds:
            os.close(fd)


def _receive(conn: socket.socket) -> tuple[bytes, list[int]]:
    """The request's JSON (up to its newline) and the descriptors that came with its first part."""
    fds: list[int] = []
    data = b""
    space = socket.CMSG_SPACE(3 * struct.calcsize("i"))
    while not data.endswith(b"\n"):
        part, ancillary, _flags, _addr = conn.recvmsg(65536, space if not fds else 0, socket.MSG_CMSG_CLOEXEC)
        for level, kind, body in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                usable = len(body) - len(body) % struct.calcsize("i")
                fds.extend(struct.unpack(f"{usable // struct.calcsize('i')}i", body[:usable]))
        if not part:
            break
        data += part
        if len(data) > REQUEST_MAX:
            raise ValueError("the request is too long")
    return data, fds


def _run(conn: socket.socket, argv: list[str], cwd: str, env: Mapping[str, str], fds: list[int]) -> int:
    """Run `argv` with the caller's descriptors; its exit code. SIGINT to it when the caller leaves."""
    import subprocess  # only a head that is asked pays for it

    with proctree.reaping:  # no reaper of this process may collect its status first
        child = subprocess.Popen(argv, cwd=cwd, env=dict(env), stdin=fds[0], stdout=fds[1], stderr=fds[2])
        proctree.spawned.add(child.pid)
    try:
        pidfd = os.pidfd_open(child.pid)
        try:
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)
            poller.register(conn.fileno(), select.POLLIN | select.POLLHUP)
            while True:
                ready = {fd for fd, _ in poller.poll()}
                if pidfd in ready:
                    break
                if conn.fileno() in ready:  # the caller left (or wrote more): interrupt, as its Ctrl-C would
                    poller.unregister(conn.fileno())
                    child.send_signal(signal.SIGINT)
        finally:
            os.close(pidfd)
        return child.wait()
    finally:
        with proctree.reaping:
            proctree.spawned.discard(child.pid)


def descends(pid: int, head: int) -> bool:
    """Whether `pid` is a descendant of `head` (walking parents through /proc)."""
    for _ in range(ANCESTRY_MAX):
        if pid <= 1:
            return False
        stat = proctree.stat_of(str(pid))
        if stat is None:
            return False
        pid = stat[1]
        if pid == head:
            return True
    return False


def forward(name: str, argv: Sequence[str]) -> tuple[int | None, str]:
    """In the work: send this request to the run's head; (the exit status of the `li` it ran, "")
    or (None, why) when no head acted (the caller then answers as it would without one)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        refused = _reach(sock, name)
        if refused:
            return None, refused
        said = _ask(sock, json.dumps({"argv": list(argv), "cwd": os.getcwd()}).encode() + b"\n")
    except OSError as exc:
        return None, f"the run's broker did not answer: {exc.strerror or exc}"
    finally:
        sock.close()
    if said.startswith("exit ") and said[5:].lstrip("-").isdigit():
        return int(said[5:]), ""
    return None, f"the run's broker did not act: {said.removeprefix('refused ') or 'no answer'}"


def _reach(sock: socket.socket, name: str) -> str:
    """Connect to the run's head; "" when it is there and this user's, else why not."""
    try:
        sock.connect("\0" + name)
    except OSError as exc:
        return f"the run's broker did not answer: {exc.strerror or exc}"
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                          struct.calcsize("3i")))
    if uid != os.geteuid():  # the run's head is this user's; a socket of another is no broker
        return f"the socket {name} is another user's (uid {uid}), not the run's broker"
    return ""


def _ask(sock: socket.socket, body: bytes) -> str:
    """Send the request with this process's stdin, stdout and stderr; the head's answer. A head
    that refuses answers at once and closes without reading: the send may then meet a closed
    socket (EPIPE), and the refusal is still there to read."""
    try:  # noqa: SIM105 - contextlib would be one more import on the lean client path (bootstrap)
        sock.sendmsg([body], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("3i", 0, 1, 2))])
    except (BrokenPipeError, ConnectionResetError):
        pass
    return _answer_of(sock)


def _answer_of(sock: socket.socket) -> str:
    """The head's one line (`exit N`, or `refused why`), read to its newline or the socket's end."""
    answer = b""
    while not answer.endswith(b"\n") and len(answer) < 4096:
        part = sock.recv(4096)
        if not part:
            break
        answer += part
    return answer.decode("utf-8", "replace").strip()
