"""`li agent --executor slurm` through the real single-node cluster (tools/slurm_local.sh).

The filesystem store is shared by construction here: the cluster's one node is this machine. Each
case drives the installed `li` and the real Slurm client tools; Slurm's state is checked beside
li's answer, never taken as it.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import time
from typing import Any

import pytest

from tests.slurm import job_fields, slurm, wait_state
from tests.support import machine, run_li, status_data, wait_terminal

ENDED = frozenset({"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY",
                   "PREEMPTED", "TIMEOUT"})


def record(home: str, run_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(pathlib.Path(home, "runs", run_id, "record.json").read_text())
    return data


def submit(home: str, script: str, *options: str) -> str:
    data = machine("agent", "sh", script, "--executor", "slurm", "--detach", *options, home=home).data
    assert data["pid"] is None  # the runner is not started here; the record names the job
    return str(data["run_id"])


def wait_record(home: str, run_id: str, ready: Any, timeout: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        current = record(home, run_id)
        if ready(current):
            return current
        assert time.monotonic() < deadline, f"record of {run_id} never got there: {current}"
        time.sleep(0.1)


def started(home: str, run_id: str) -> dict[str, Any]:
    return wait_record(home, run_id, lambda r: r["spawn_state"] == "started")


@pytest.fixture
def home(li_home: str, slurm_conf: str) -> str:
    return li_home


def test_a_run_submitted_to_slurm_runs_once_and_its_output_and_end_are_li_s(home: str, slurm_conf: str) -> None:
    began = time.monotonic()
    run_id = submit(home, "echo out-$LI_RUN_ID; echo to-stderr >&2")
    handle_seconds = time.monotonic() - began
    rec = record(home, run_id)
    assert rec["spawn_state"] in ("preparing", "started") and rec["executor"] == "slurm"
    job_id = rec["engine"]["job_id"]
    assert rec["engine"]["submit_time"] == job_fields(slurm_conf, job_id)["SubmitTime"]  # TZ=UTC here too
    rec = started(home, run_id)
    started_seconds = time.monotonic() - began
    end = wait_terminal(home, run_id, timeout=60)
    assert (end["status"], end["outcome"], end["exit_code"]) == ("completed", "succeeded", 0)
    rec = record(home, run_id)
    assert rec["incarnation"]["job_id"] == job_id and rec["incarnation"]["restart_count"] == 0
    assert rec["engine"]["cluster"] == "lionrun" and rec["terminal_source"] == "runner"
    fields = job_fields(slurm_conf, job_id)
    assert fields["JobName"] == run_id and fields["Requeue"] == "0" and fields["Restarts"] == "0"
    assert end["job"] == {"executor": "slurm", "cluster": "lionrun", "job_id": job_id}
    shown = run_li("job", "status", run_id, home=home)
    assert f"slurm job {job_id} on lionrun" in shown.stdout, shown.stdout
    output = machine("job", "output", run_id, home=home).data
    assert f"out-{run_id}" in output["console"]["value"] and "to-stderr" in output["console"]["value"]
    print(f"\nslurm: submit -> handle {handle_seconds:.2f} s, submit -> started {started_seconds:.2f} s")


def test_a_fanout_s_legs_run_inside_one_job(home: str, slurm_conf: str) -> None:
    data = machine("orchestrate", "fanout", "sh", "echo leg-$LI_LEG_ID-$SLURM_JOB_ID", "--legs", "3",
                   "--executor", "slurm", "--detach", home=home).data
    run_id = data["run_id"]
    end = wait_terminal(home, run_id, timeout=60)
    assert (end["status"], end["outcome"]) == ("completed", "succeeded"), end
    job_id = record(home, run_id)["engine"]["job_id"]
    console = machine("job", "output", run_id, home=home).data["console"]["value"]
    for leg in ("leg-1", "leg-2", "leg-3"):
        assert f"{leg}-{job_id}" in console, console


def test_li_job_kill_cancels_a_running_slurm_run(home: str, slurm_conf: str) -> None:
    run_id = submit(home, "sleep 300")
    job_id = started(home, run_id)["engine"]["job_id"]
    wait_state(slurm_conf, job_id, {"RUNNING"})
    answer = machine("job", "kill", run_id, home=home).data
    assert answer["action"] == "signalled"
    end = wait_terminal(home, run_id, timeout=60)
    assert (end["terminal"], end["outcome"]) == (True, "cancelled"), end
    assert wait_state(slurm_conf, job_id, ENDED)["JobState"] in ENDED


def test_li_job_kill_of_a_queued_run_removes_the_job_and_the_run_reads_cancelled(
        home: str, slurm_conf: str, full_node: str) -> None:
    run_id = submit(home, "echo never")
    job_id = record(home, run_id)["engine"]["job_id"]
    assert job_fields(slurm_conf, job_id)["JobState"] == "PENDING"
    assert machine("job", "kill", run_id, home=home).data["action"] == "signalled"
    assert wait_state(slurm_conf, job_id, ENDED)["JobState"] == "CANCELLED"
    end = wait_terminal(home, run_id, timeout=30)
    assert (end["status"], end["outcome"], end["spawn_state"]) == ("cancelled", "cancelled", "preparing")
    console = machine("job", "output", run_id, home=home).data["console"]
    assert "never" not in (console.get("value") or "")  # the runner never ran


def test_an_outside_scancel_ends_the_run_without_a_false_success(home: str, slurm_conf: str) -> None:
    run_id = submit(home, "sleep 300")
    job_id = started(home, run_id)["engine"]["job_id"]
    wait_state(slurm_conf, job_id, {"RUNNING"})
    slurm(slurm_conf, "scancel", job_id)
    end = wait_terminal(home, run_id, timeout=60)
    assert end["terminal"] and end["outcome"] in ("cancelled", "indeterminate"), end
    assert wait_state(slurm_conf, job_id, ENDED)["JobState"] == "CANCELLED"


def test_a_runner_sigkilled_on_the_node_is_reaped_indeterminate_once_slurm_says_the_job_ended(
        home: str, slurm_conf: str) -> None:
    run_id = submit(home, "sleep 300")
    rec = started(home, run_id)
    job_id = rec["engine"]["job_id"]
    os.kill(rec["incarnation"]["pid"], signal.SIGKILL)
    fields = wait_state(slurm_conf, job_id, ENDED)
    end = wait_terminal(home, run_id, timeout=30)
    assert (end["status"], end["outcome"], end["reason_code"]) == ("exited", "indeterminate",
                                                                   "job_ended_without_outcome"), end
    rec = record(home, run_id)
    assert rec["terminal_source"] == "reaper"
    evidence = rec["terminal_evidence"]
    assert evidence["finding"] == "job_ended" and evidence["recorded"]["job_id"] == job_id
    assert evidence["observed"][0]["state"] == fields["JobState"]
    assert evidence["observed"][0]["exit_code"] == fields["ExitCode"]


@pytest.fixture
def full_node(slurm_conf: str, tmp_path: pathlib.Path) -> Any:
    """A job holding every CPU of the one node, so the next job stays PENDING; cancelled afterwards."""
    cpus = slurm(slurm_conf, "sinfo", "-h", "-N", "-o", "%c").stdout.split()[0]
    blocker = slurm(slurm_conf, "sbatch", "--parsable", "--no-requeue", "--job-name=li-test-blocker",
                    f"--cpus-per-task={cpus}", f"--output={tmp_path / 'blocker.out'}", "--wrap", "sleep 300").stdout.strip()
    wait_state(slurm_conf, blocker, {"RUNNING"})
    yield blocker
    slurm(slurm_conf, "scancel", blocker, check=False)


def test_a_run_queued_behind_a_full_node_stays_preparing_and_is_not_an_unresolved_spawn(
        home: str, slurm_conf: str, full_node: str) -> None:
    run_id = submit(home, "echo ran")
    job_id = record(home, run_id)["engine"]["job_id"]
    time.sleep(2)  # a scheduler pass or two: it still cannot start
    assert job_fields(slurm_conf, job_id)["JobState"] == "PENDING"
    # As if it had waited in the queue for two hours: still preparing, never an unresolved spawn.
    path = pathlib.Path(home, "runs", run_id, "record.json")
    rec = json.loads(path.read_text())
    rec["submitted_at"] = "2000-01-01T00:00:00.000000+00:00"
    path.write_text(json.dumps(rec))
    data = status_data(home, run_id)
    assert (data["status"], data["terminal"], data["spawn_state"], data["possibly_orphaned"]) == (
        "running", False, "preparing", False), data
    slurm(slurm_conf, "scancel", full_node)
    end = wait_terminal(home, run_id, timeout=60)
    assert (end["status"], end["outcome"]) == ("completed", "succeeded"), end


def test_a_job_the_cluster_no_longer_knows_is_inconclusive_never_terminal(home: str, slurm_conf: str) -> None:
    run_id = submit(home, "sleep 300")
    rec = started(home, run_id)
    job_id = rec["engine"]["job_id"]
    path = pathlib.Path(home, "runs", run_id, "record.json")
    # What a purge (MinJobAge passed, no accounting) looks like: the recorded job id is unknown.
    rec["engine"]["job_id"] = "999999"
    path.write_text(json.dumps(rec))
    try:
        for _ in range(3):
            data = status_data(home, run_id)
            assert (data["terminal"], data["status"], data["possibly_orphaned"]) == (False, "running", False), data
        assert record(home, run_id)["finished_at"] is None
    finally:
        slurm(slurm_conf, "scancel", job_id, check=False)


def test_an_unknown_executor_and_slurm_options_without_slurm_are_refused(home: str) -> None:
    for argv in (("--executor", "k8s"), ("--partition", "debug"), ("--executor", "slurm", "--slurm-arg=--requeue")):
        result = run_li("agent", "sh", "true", "--detach", *argv, "--machine", home=home)
        envelope = json.loads(result.stdout)
        assert envelope["error"]["kind"] == "invalid_input", (argv, envelope)
    assert not pathlib.Path(home, "runs").exists() or not any(pathlib.Path(home, "runs").iterdir())


def test_doctor_checks_the_slurm_tools_when_slurm_is_the_executor(home: str, tmp_path: pathlib.Path) -> None:
    def slurm_check(env: dict[str, str] | None = None) -> list[dict[str, Any]]:
        checks = machine("doctor", home=home, env=env).data["checks"]
        return [c for c in checks if c["name"] == "executor.slurm"]

    assert slurm_check() == []  # local, the default: no Slurm check
    pathlib.Path(home, "config.toml").write_text('executor = "slurm"\n')
    [check] = slurm_check()
    assert check["ok"] and "lionrun" in check["detail"], check
    # Without the tools on PATH the check fails, with what to do.
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("sh", "python3"):
        found = shutil.which(tool)
        if found:
            (bare / tool).symlink_to(found)
    [check] = slurm_check({"PATH": str(bare)})
    assert not check["ok"] and check["severity"] == "error" and "sbatch" in check["detail"], check


def restart_slurmd(slurm_conf: str, timeout: float = 60.0) -> None:
    """Start slurmd again as tools/slurm_local.sh does, and wait until the node is back in service."""
    import subprocess

    subprocess.run(["slurmd", "-f", slurm_conf, "-N", "localhost"], env={**os.environ, "SLURM_CONF": slurm_conf},
                   stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = slurm(slurm_conf, "sinfo", "-h", "-N", "-o", "%T", check=False).stdout.strip()
        if state.rstrip("*") in ("idle", "mixed", "allocated"):
            return
        time.sleep(0.5)
    raise AssertionError(f"the node did not return to service after slurmd restarted: {state}")


def test_slurmd_killed_and_restarted_never_runs_the_work_twice_nor_ends_the_run_falsely(
        home: str, slurm_conf: str) -> None:
    run_id = submit(home, "echo once-$LI_RUN_ID; sleep 120; echo after")
    rec = started(home, run_id)
    job_id, runner = rec["engine"]["job_id"], rec["incarnation"]["pid"]
    wait_state(slurm_conf, job_id, {"RUNNING"})
    pid_file = pathlib.Path(slurm_conf).parent / "run" / "slurmd.pid"
    os.kill(int(pid_file.read_text().split()[0]), signal.SIGKILL)
    seen_states = set()
    try:
        # After SlurmdTimeout (and a ping round: about 30 s here) the controller calls the node down
        # and the job NODE_FAIL while its runner still runs. By default Slurm would requeue it and run
        # it a second time; here it is not requeued, and li ends nothing on what Slurm says.
        deadline = time.monotonic() + 90
        while "NODE_FAIL" not in seen_states and time.monotonic() < deadline:
            seen_states.add(job_fields(slurm_conf, job_id).get("JobState"))
            data = status_data(home, run_id)
            assert not data["terminal"] and data["status"] == "running", data
            time.sleep(1)
        assert "NODE_FAIL" in seen_states, seen_states
        assert pathlib.Path(f"/proc/{runner}").exists()  # the runner still runs: NODE_FAIL is no end
        data = status_data(home, run_id)
        assert not data["terminal"] and not data["possibly_orphaned"], data
    finally:
        restart_slurmd(slurm_conf)
    end = wait_terminal(home, run_id, timeout=30)
    rec = record(home, run_id)
    console = machine("job", "output", run_id, home=home).data["console"].get("value") or ""
    assert console.count(f"once-{run_id}") == 1, console  # the work ran once
    assert rec["incarnation"]["restart_count"] == 0 and job_fields(slurm_conf, job_id)["Restarts"] == "0"
    assert not seen_states & {"PENDING", "REQUEUED"}, seen_states
    if end["terminal"]:  # only the runner's own end, never one read off NODE_FAIL
        assert rec["terminal_source"] == "runner", rec
    print(f"\nslurmd killed: Slurm said {sorted(s for s in seen_states if s)}; li then: {end['status']} "
          f"({end['outcome']}), written by {rec['terminal_source']}")


def test_a_slurm_run_on_the_postgresql_store_reports_its_console_artifacts_and_end(
        home: str, slurm_conf: str, pg_dsn: str) -> None:
    env = {"LI_STORE": pg_dsn}
    machine("store", "init", home=home, env=env)
    run_id = machine("agent", "sh", "echo pg-out; echo kept > $LI_ARTIFACTS_DIR/a.txt", "--executor", "slurm",
                     "--detach", home=home, env=env).data["run_id"]
    deadline = time.monotonic() + 60
    while not (data := machine("job", "status", run_id, home=home, env=env).data)["terminal"]:
        assert time.monotonic() < deadline, data
        time.sleep(0.2)
    assert (data["status"], data["outcome"], data["job"]["executor"]) == ("completed", "succeeded", "slurm"), data
    output = machine("job", "output", run_id, home=home, env=env).data
    assert "pg-out" in output["console"]["value"]
    assert "a.txt" in {entry["name"] for entry in output["artifacts"]["value"]}, output["artifacts"]
    assert not pathlib.Path(home, "runs").exists()  # nothing of the run in the filesystem store
