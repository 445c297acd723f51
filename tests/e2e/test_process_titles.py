"""Every li process of a run names the run, so `ps` and `top` show which run it
is: the process name (/proc/PID/comm, what prctl PR_SET_NAME sets) and the command line."""

from __future__ import annotations

import os
import time

import pytest

from tests.support import machine


def named(run_id: str) -> list[tuple[str, str]]:
    """(comm, cmdline) of every process whose name carries the run's short id."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/comm", encoding="utf-8", errors="replace") as handle:
                comm = handle.read().strip()
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if comm.startswith("li-") and comm.endswith(run_id[-6:]):
            found.append((comm, cmdline))
    return found


@pytest.mark.parametrize("supervisor, role", [("lean", "li-sup"), ("full", "li-run")])
def test_the_runs_own_processes_name_it(li_home: str, supervisor: str, role: str) -> None:
    env = {"LI_SUPERVISOR": supervisor}
    run_id = machine("agent", "--detach", "sh", "sleep 30", home=li_home, env=env).data["run_id"]
    try:
        deadline = time.monotonic() + 20

        def seen() -> bool:  # the runner names itself first; the lean one then hands over to the supervisor
            return any(comm == f"{role}-{run_id[-6:]}" and run_id in cmdline for comm, cmdline in named(run_id))

        while not seen() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert seen(), named(run_id)
    finally:
        machine("job", "kill", run_id, home=li_home)
