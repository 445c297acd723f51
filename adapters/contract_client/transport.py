"""How the client reaches `li`: one subprocess call, swappable so tests can hand-write its result."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Completed:
    """What one invocation of `li` produced, before anything is parsed."""

    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    launch_error: str | None = None
    timed_out: bool = False


class Runner(Protocol):
    """Runs an argv (absolute executable first) and reports what came back; never raises."""

    def __call__(
        self, argv: Sequence[str], timeout: float, stdin: str | None = None
    ) -> Completed: ...


class Stoppable:
    """The children of the calls a caller may have to stop (a cancelled MCP `wait`): each is
    registered here while it runs, dies with this process (PR_SET_PDEATHSIG on Linux), and
    `stop()` kills them at once."""

    def __init__(self, background: bool = False) -> None:
        self.background = background  # children run at a lower priority (nice 10): long observers
        self._lock = threading.Lock()
        self._children: set[subprocess.Popen[bytes]] = set()
        self._stopped = False

    def add(self, child: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._children.add(child)
            stopped = self._stopped
        if stopped:  # stopped while this child was being started
            _kill(child)

    def discard(self, child: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._children.discard(child)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            children = list(self._children)
        for child in children:
            _kill(child)


#: Set by a caller whose calls in this context may be stopped (see `stoppable`).
STOPPABLE: ContextVar[Stoppable | None] = ContextVar("li_stoppable", default=None)


@contextmanager
def stoppable(background: bool = False) -> Iterator[Stoppable]:
    """Calls made in this context (and worker threads started from it) register their children
    with the Stoppable it yields; `background`: at a lower CPU priority."""
    holder = Stoppable(background)
    token = STOPPABLE.set(holder)
    try:
        yield holder
    finally:
        STOPPABLE.reset(token)


def _kill(child: subprocess.Popen[bytes]) -> None:
    with suppress(OSError):
        child.send_signal(signal.SIGKILL)


def _preexec(background: bool) -> Callable[[], None] | None:
    """A preexec function asking Linux to SIGKILL the child when its parent dies (and, for a
    background child, to lower its priority); None where there is no prctl."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl: Any = ctypes.CDLL(None, use_errno=True).prctl  # resolved here, never in the child
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1
    nice = os.nice

    def arm() -> None:
        prctl(pr_set_pdeathsig, int(signal.SIGKILL))
        if background:
            nice(10)

    return arm


class SubprocessRunner:
    """The real runner: a child process per call, stdin closed unless text is given. Inside
    `stoppable()`, each child is registered so the caller can kill it, and dies with this process."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = dict(env) if env is not None else None

    def __call__(self, argv: Sequence[str], timeout: float, stdin: str | None = None) -> Completed:
        feed = subprocess.DEVNULL if stdin is None else subprocess.PIPE
        data = None if stdin is None else stdin.encode("utf-8")
        holder = STOPPABLE.get()
        try:
            child = subprocess.Popen(
                list(argv), stdin=feed, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self._env,
                preexec_fn=_preexec(holder.background) if holder is not None else None,  # noqa: PLW1509
            )
        except (OSError, ValueError) as exc:
            return Completed(None, launch_error=f"{type(exc).__name__}: {exc}")
        if holder is not None:
            holder.add(child)
        try:
            return _communicate(child, data, timeout)
        finally:
            if holder is not None:
                holder.discard(child)


def _communicate(child: subprocess.Popen[bytes], data: bytes | None, timeout: float) -> Completed:
    with child:
        try:
            out, err = child.communicate(data, timeout=timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            out, err = child.communicate()
            return Completed(None, _text(out), _text(err), timed_out=True)
        except OverflowError as exc:  # an unbounded timeout
            child.kill()
            child.communicate()
            return Completed(None, launch_error=f"{type(exc).__name__}: {exc}")
        except BaseException:
            child.kill()
            raise
    return Completed(child.returncode, _text(out), _text(err))


def _text(raw: bytes | str | None) -> str:
    if raw is None:
        return ""
    return raw if isinstance(raw, str) else raw.decode("utf-8", errors="replace")
