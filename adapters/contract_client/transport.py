"""How the client reaches `li`: one subprocess call, swappable so tests can hand-write its result."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol


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


class SubprocessRunner:
    """The real runner: a child process per call, stdin closed unless text is given."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = dict(env) if env is not None else None

    def __call__(self, argv: Sequence[str], timeout: float, stdin: str | None = None) -> Completed:
        feed = subprocess.DEVNULL if stdin is None else None
        data = None if stdin is None else stdin.encode("utf-8")
        try:
            done = subprocess.run(
                list(argv),
                input=data,
                stdin=feed,
                capture_output=True,
                timeout=timeout,
                env=self._env,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            return Completed(None, _text(exc.stdout), _text(exc.stderr), timed_out=True)
        except (OSError, ValueError, OverflowError) as exc:  # OverflowError: an unbounded timeout
            return Completed(None, launch_error=f"{type(exc).__name__}: {exc}")
        return Completed(done.returncode, _text(done.stdout), _text(done.stderr))


def _text(raw: bytes | str | None) -> str:
    if raw is None:
        return ""
    return raw if isinstance(raw, str) else raw.decode("utf-8", errors="replace")
