"""Fault injection for the fault suite: a store that pauses at a named phase so a test can SIGKILL there.

Off unless `LI_FAULT_PAUSE=<phase>` is set (the runner inherits it from the submitting `li`); the
composition root then selects this store by configuration (`entrypoints/container.py`). At the
phase the process writes its pid to `$LI_FAULT_DIR/<phase>.pid` (default: `$LI_HOME`) and sleeps
`$LI_FAULT_SECONDS` (default 60) before carrying on. Phases:

- `before_spawn`  — submitter: the `preparing` record is written, the child not yet spawned;
- `before_work`   — runner: about to read the instruction, nothing of the work has run;
- `after_artifacts` — runner: artifacts and `manifest.json` written, no end recorded yet;
- `after_end`     — runner: the end is recorded, the notice not yet sent;
- `store_locked`  — prune, rm, store copy, doctor --fix: the store's lock is held, nothing done
  yet (adapters/store_lock.py pauses there itself; the store is not wrapped for it).
"""

from __future__ import annotations

import os
import time
from typing import Any

from lionrun.domain.run import PREPARING, Run

PHASES = ("before_spawn", "before_work", "after_artifacts", "after_end")  # the store's; store_locked is the lock's


def pause(phase: str) -> None:
    """Mark and sleep when `phase` is the one asked for in `LI_FAULT_PAUSE`."""
    if os.environ.get("LI_FAULT_PAUSE") != phase:
        return
    folder = os.environ.get("LI_FAULT_DIR") or os.environ.get("LI_HOME") or "."
    marker = os.path.join(folder, f"{phase}.pid")
    with open(marker + ".tmp", "w", encoding="ascii") as handle:
        handle.write(str(os.getpid()))
    os.replace(marker + ".tmp", marker)
    time.sleep(float(os.environ.get("LI_FAULT_SECONDS", "60")))


class PausingStore:
    """Delegates to the real store, pausing at the phase boundaries the fault suite kills at."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def create(self, run: Run) -> Run:
        created: Run = self._inner.create(run)
        if created.spawn_state == PREPARING:
            pause("before_spawn")
        return created

    def read_text(self, run_id: str, name: str) -> str:
        if name == "instruction.txt":
            pause("before_work")
        text: str = self._inner.read_text(run_id, name)
        return text

    def write_text(self, run_id: str, name: str, text: str) -> None:
        self._inner.write_text(run_id, name, text)
        if name == "manifest.json":
            pause("after_artifacts")

    def update(self, run_id: str, change: Any, lock_timeout: float = 10.0) -> Run | None:
        written: Run | None = self._inner.update(run_id, change, lock_timeout)
        if written is not None and written.finished_at is not None and written.terminal_source == "runner":
            pause("after_end")
        return written

