"""SIGKILL a run from the host it runs on: `python -m tests.load.kill_in_host session|runner|alive RUN_ID
INCARNATION_JSON`, started inside that host's namespaces (its pids are the record's pids there).

`session` kills the runner and every member of its session (the work's process groups too) and
returns once none is left alive; `runner` waits until the runner has started its work (a live
member of its session besides itself: on a loaded machine a runner may take seconds to get there,
and killed before, it leaves nothing alive to outlive it), then kills the recorded runner alone
(verified to be that run's runner) and leaves its work running; `alive` prints the run's live
processes (for a failure's message). Kept light (no psutil, no test builders): a load test
starts it many times on two cores.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

from lionrun.adapters.processes import GroupSignaller, carries_run, scan_session
from lionrun.domain.run import Incarnation

WITHIN = 30.0


def alive(pid: int) -> bool:
    """Present and not a zombie (a zombie nobody collects is gone as far as the run is concerned)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def session_alive(leader: int) -> list[int]:
    return [m.pid for m in scan_session(leader) or () if m.session == leader and not m.zombie]


def kill_session(run_id: str, incarnation: Incarnation) -> None:
    deadline = time.monotonic() + WITHIN
    while True:
        GroupSignaller().signal_session(run_id, incarnation, "kill")
        if not session_alive(incarnation.pid) and not alive(incarnation.pid):
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"run {run_id}: its session survived SIGKILL")
        time.sleep(0.02)


def kill_runner(run_id: str, incarnation: Incarnation) -> None:
    if not carries_run(incarnation.pid, run_id):
        raise SystemExit(f"run {run_id}: pid {incarnation.pid} is not its runner")
    deadline = time.monotonic() + WITHIN
    while not [pid for pid in session_alive(incarnation.pid) if pid != incarnation.pid]:
        if not alive(incarnation.pid) or time.monotonic() > deadline:
            raise SystemExit(f"run {run_id}: its runner never started its work")
        time.sleep(0.02)
    os.kill(incarnation.pid, signal.SIGKILL)
    deadline = time.monotonic() + WITHIN
    while alive(incarnation.pid):
        if time.monotonic() > deadline:
            raise SystemExit(f"run {run_id}: its runner survived SIGKILL")
        time.sleep(0.01)


def show_alive(run_id: str, incarnation: Incarnation) -> None:
    """Print (JSON) the run's live processes besides its runner, as this host's /proc shows them:
    what a test names when a read ended a run it believed still working."""
    from lionrun.adapters import proctree

    found = proctree.run_processes(-1, f"LI_RUN_ID={run_id}".encode()) or {}
    rows = []
    for pid in sorted(found):
        stat = proctree.stat_of(str(pid))
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                command = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")[:80]
        except OSError:
            command = "?"
        rows.append({"pid": pid, "stat": stat, "command": command})
    print(json.dumps({"runner_alive": alive(incarnation.pid), "processes": rows}))


def main(argv: list[str]) -> None:
    what, run_id, raw = argv
    incarnation = Incarnation(**json.loads(raw))
    {"session": kill_session, "runner": kill_runner, "alive": show_alive}[what](run_id, incarnation)


if __name__ == "__main__":
    main(sys.argv[1:])
