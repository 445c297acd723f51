"""The command notifier: runs the rendered argv (no shell) in its own process group, payload on stdin."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from lionrun.adapters import proctree
from lionrun.application.ports import NoticeResult
from lionrun.domain.notify import DEFAULT_TIMEOUT_SECONDS

_STDERR_KEPT = 500  # characters of the command's stderr kept as the error text


class CommandNotifier:
    """`Notifier` over a subprocess; every failure becomes a closed `failure_class`, never a raise."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self.timeout = timeout

    def deliver(self, argv: Sequence[str], payload: Mapping[str, Any]) -> NoticeResult:
        if not argv:
            return _failed("unknown", "the notify command is empty")
        body = json.dumps(dict(payload), ensure_ascii=False, sort_keys=True).encode("utf-8")
        with _scratch() as errors:
            try:
                child = subprocess.Popen(
                    list(argv), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=errors,
                    start_new_session=True, close_fds=True,
                )
            except FileNotFoundError as exc:
                return _failed("command_not_found", f"{argv[0]}: {exc.strerror}")
            except PermissionError as exc:
                return _failed("permission_denied", f"{argv[0]}: {exc.strerror}")
            except (OSError, ValueError, subprocess.SubprocessError) as exc:
                return _failed("unknown", f"{type(exc).__name__}: {exc}")
            return self._wait(child, body, errors)

    def _wait(self, child: subprocess.Popen[bytes], body: bytes, errors: Any) -> NoticeResult:
        try:
            child.communicate(body, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _kill_now(child)
            return _failed("timeout", f"no exit within {self.timeout:g}s; its process group was killed")
        code = child.returncode
        if code == 0:
            return NoticeResult(ok=True, exit_code=0)
        if code < 0:
            return _failed("signalled", f"killed by {_signal_name(-code)}", exit_code=code)
        return _failed("nonzero_exit", _tail(errors) or f"exited {code}", exit_code=code)


def _scratch() -> Any:
    """Where the command's stderr goes: an anonymous memory file (Linux), never a file on disk
    outside the store; a temporary file only where memfd does not exist."""
    if hasattr(os, "memfd_create"):
        try:
            return open(os.memfd_create("li-notice-stderr", os.MFD_CLOEXEC), "w+b")
        except OSError:
            pass
    return tempfile.TemporaryFile()


def _failed(failure_class: str, error: str, exit_code: int | None = None) -> NoticeResult:
    return NoticeResult(ok=False, exit_code=exit_code, error=error, failure_class=failure_class)


def _kill_now(child: subprocess.Popen[bytes]) -> None:
    """The notify command ran past its timeout: its whole group is SIGKILLed, no grace."""
    if not proctree.kill_group(child.pid, signal.SIGKILL):
        child.kill()
    child.wait()


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _tail(errors: Any) -> str:
    errors.seek(0)
    text: str = errors.read().decode("utf-8", errors="replace").strip()
    return text[-_STDERR_KEPT:]
