"""Handing a one-leg run over to the lean supervisor (`adapters/supervisor.py`) by exec.

The runner has read the request and prepared the leg (`WorkService.supervise`); here the leg's
stdin text and the spec become anonymous files, and the runner's process becomes
`python -I -S adapters/supervisor.py SPEC_FD`: the same pid, session and incarnation, a tenth of
the imports. Only descriptors made for it cross the exec; the run folder's descriptor is opened
by the store, never by path.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence

from lionrun.adapters.fs_store import RECORD
from lionrun.adapters.providers import (
    IDLE_SAID,
    PUMP_JOIN,
    close_all,
    script_descriptor,
)
from lionrun.application.work import KILL_SEEN, LeanHandover
from lionrun.domain.evidence import KILL_GRACE
from lionrun.domain.run import RUN_TAG
from lionrun.domain.untrusted import RECORD_MAX_BYTES

SUPERVISOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "supervisor.py")


def hand_over(supervision: LeanHandover, folder: int | None, finish: Sequence[str],
              stopped: Callable[[], bool], die_with_runner: bool = False) -> None:
    """Exec the lean supervisor in this process's place. Returns only when the exec failed or
    `stopped()` says a SIGTERM came (its handler has run by the time this asks), with everything
    it opened closed (the leg's own descriptors too): the caller then keeps the run in-process."""
    launch = supervision.launch
    made: list[int] = []
    try:
        stdin = None
        if launch.stdin_text is not None:
            stdin = script_descriptor(launch.stdin_text, "li-leg-stdin")
            made.append(stdin)
        capture = script_descriptor("", "li-leg-stdout")
        made.append(capture)
        spec = {
            "run_id": supervision.run_id, "argv": list(launch.argv), "cwd": supervision.cwd,
            "env": dict(supervision.env), "stdin_fd": stdin, "pass_fds": list(launch.keeps),
            "timeout": supervision.timeout, "began": supervision.began, "kill_watch": supervision.kill_watch,
            "folder_fd": folder, "capture_fd": capture, "finish": list(finish),
            "confine": None if supervision.confine is None else dict(supervision.confine),
            # the supervisor imports nothing of lionrun: what it shares with it comes from here
            "kill_grace": KILL_GRACE, "pump_join": PUMP_JOIN, "record": RECORD,
            "record_max_bytes": RECORD_MAX_BYTES, "kill_seen": KILL_SEEN,
            # a queued run's slot is held by this process: its leg must not outlive it
            "die_with_runner": die_with_runner,
            "run_tag": f"{RUN_TAG}={supervision.run_id}", "idle_timeout": supervision.idle_timeout,
            "idle_said": IDLE_SAID,
        }
        spec_fd = script_descriptor(json.dumps(spec), "li-supervision")
        made.append(spec_fd)
        for fd in (*made, *launch.keeps, *(() if folder is None else (folder,))):
            os.set_inheritable(fd, True)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        if stopped():
            raise InterruptedError("a SIGTERM came before the hand-over")
        # The run id after the descriptor: `ps` shows which run this supervisor is.
        os.execv(sys.executable, [sys.executable, "-I", "-S", SUPERVISOR, str(spec_fd), supervision.run_id])
    except OSError:
        close_all(made)
        close_all(launch.keeps)


def captured_lines(fd: int) -> list[str]:
    """The leg's stdout as the supervisor captured it, in lines as the in-process runner reads
    them (split after each newline, each decoded alone, undecodable bytes replaced)."""
    os.lseek(fd, 0, os.SEEK_SET)
    with open(fd, "rb") as capture:  # closes fd; readlines splits after each newline, as readline does
        return [line.decode("utf-8", errors="replace") for line in capture.readlines()]
