"""On the real single-node cluster: Slurm's own stops are recorded as what they were, and a
controller that is down never stretches a read past its bound.

- an outside `scancel` → `cancelled`, a time limit → `timed_out` with the limit, each recorded by the
  runner itself (it receives Slurm's SIGTERM: its process name holds no space, see
  adapters/proctree.name_process), Slurm's state kept as `terminal_evidence`;
- slurmctld stopped → `li job status` of an ended run answers from the store (<= 1 s), `li job
  wait --max-wait 5` on live runs within its window (<= 7 s), `li job list` <= 3 s; live runs stay
  non-terminal and say the cluster could not be asked.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.slurm import slurm, wait_state
from tests.support import machine, wait_terminal

ENDED = frozenset({"CANCELLED", "COMPLETED", "FAILED", "TIMEOUT"})


def record(home: str, run_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(pathlib.Path(home, "runs", run_id, "record.json").read_text())
    return data


def submit(home: str, script: str, *options: str) -> str:
    return str(machine("agent", "sh", script, "--executor", "slurm", "--detach", *options, home=home).data["run_id"])


def started(home: str, run_id: str, timeout: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        rec = record(home, run_id)
        if rec["spawn_state"] == "started":
            return rec
        assert time.monotonic() < deadline, rec
        time.sleep(0.1)


@pytest.fixture
def home(li_home: str, slurm_conf: str) -> str:
    return li_home


def test_an_outside_scancel_is_recorded_cancelled_by_the_runner(home: str, slurm_conf: str) -> None:
    run_id = submit(home, "echo began; sleep 300")
    job_id = started(home, run_id)["engine"]["job_id"]
    wait_state(slurm_conf, job_id, {"RUNNING"})
    slurm(slurm_conf, "scancel", job_id)
    end = wait_terminal(home, run_id, timeout=60)
    rec = record(home, run_id)
    assert (end["status"], end["outcome"], rec["terminal_source"]) == ("cancelled", "cancelled", "runner"), rec
    evidence = rec["terminal_evidence"]  # while Slurm ends the job it reads COMPLETING, then CANCELLED
    assert (evidence["source"], evidence["job_id"]) == ("slurm", job_id), rec
    assert evidence["state"] in ("COMPLETING", "CANCELLED") and evidence["reason"] != "TimeLimit", rec


def test_a_time_limit_is_recorded_timed_out_with_the_limit(home: str, slurm_conf: str) -> None:
    run_id = submit(home, "sleep 600", "--slurm-arg=--time=1")
    job_id = started(home, run_id)["engine"]["job_id"]
    end = wait_terminal(home, run_id, timeout=150)
    rec = record(home, run_id)
    assert (end["status"], end["reason_code"], rec["terminal_source"]) == ("timed_out", "timeout", "runner"), rec
    evidence = rec["terminal_evidence"]
    assert (evidence["job_id"], evidence["time_limit"]) == (job_id, "00:01:00"), evidence
    assert evidence["state"] == "TIMEOUT" or evidence["reason"] == "TimeLimit", evidence


@pytest.fixture
def controller(slurm_conf: str) -> Iterator[Any]:
    """Stops slurmctld when called (SIGTERM); starts it again (its state recovered) afterwards, and
    then cancels the jobs named in `stop.jobs`."""
    pid_file = pathlib.Path(slurm_conf).parent / "run" / "slurmctld.pid"
    stopped: list[int] = []
    jobs: list[str] = []

    def stop() -> None:
        pid = int(pid_file.read_text().split()[0])
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        while pathlib.Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        stopped.append(pid)

    stop.jobs = jobs  # type: ignore[attr-defined]
    yield stop
    if stopped:
        subprocess.run(["slurmctld", "-f", slurm_conf], env={**os.environ, "SLURM_CONF": slurm_conf},
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=True)
        deadline = time.monotonic() + 60
        while slurm(slurm_conf, "squeue", "-h", check=False, timeout=10).returncode != 0:
            assert time.monotonic() < deadline, "slurmctld did not come back"
            time.sleep(0.5)
    for job_id in jobs:
        slurm(slurm_conf, "scancel", job_id, check=False)


def timed(*argv: str, home: str) -> tuple[float, Any]:
    began = time.monotonic()
    answer = machine(*argv, home=home)
    return time.monotonic() - began, answer


def test_a_stopped_controller_never_stretches_a_read_past_its_bound(home: str, slurm_conf: str,
                                                                     controller: Any) -> None:
    ended = submit(home, "echo done")
    live = [submit(home, "sleep 300") for _ in range(3)]
    assert wait_terminal(home, ended, timeout=60)["status"] == "completed"
    for run_id in live:  # the node has 2 CPUs here: a run may be still queued, live all the same
        controller.jobs.append(record(home, run_id)["engine"]["job_id"])
        wait_state(slurm_conf, controller.jobs[-1], {"RUNNING", "PENDING"})
    started(home, live[0])
    controller()
    took = {}

    took["status_ended"], status = timed("job", "status", ended, home=home)
    assert status.data["status"] == "completed" and took["status_ended"] <= 1.0, (took, status.data)

    took["wait"], waited = timed("job", "wait", *live, "--max-wait", "5", home=home)
    assert waited.data["timed_out"] and not waited.data["all_terminal"], waited.data
    assert [row["terminal"] for row in waited.data["runs"]] == [False] * 3
    assert took["wait"] <= 7.0, took

    took["list"], listed = timed("job", "list", home=home)
    rows = {row["run_id"]: row for row in listed.data["runs"]}
    assert [rows[run_id]["terminal"] for run_id in live] == [False] * 3 and took["list"] <= 3.0, (took, rows)
    assert rows[ended]["status"] == "completed"

    # A live run's status says the cluster could not be asked: advisory, the run stays as recorded.
    took["status_live"], status = timed("job", "status", live[0], home=home)
    data = status.data
    assert (data["terminal"], data["status"], data["finding"]) == (False, "running", "cluster_unreachable"), data
    assert took["status_live"] <= 3.0, took

    # A kill cannot reach the controller: the request is recorded for the runner, at once.
    took["kill"], killed = timed("job", "kill", live[0], home=home)
    assert killed.data["action"] == "requested" and took["kill"] <= 3.0, (took, killed.data)
    print("\ncontroller down: " + ", ".join(f"{k} {v:.2f} s" for k, v in took.items()))
