"""The single-node Slurm cluster of tools/slurm_local.sh, driven with the real client commands.

These pin what the Slurm executor will build on: a batch job submitted without requeue
runs and is reported by squeue and scontrol; an ended job stays visible (MinJobAge); a signal sent
with `scancel --signal=TERM --full` ends a sleeping job and every process it started.
"""

from __future__ import annotations

import os
import pathlib
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from lionrun.domain.slurm import (
    SQUEUE_FORMAT,
    RecordedJob,
    SlurmJob,
    judge_job,
    parse_sbatch,
    parse_scontrol,
    parse_squeue,
)
from tests.slurm import LIVE_STATES, slurm, wait_state

ENDED_STATES = frozenset({"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL",
                          "OUT_OF_MEMORY", "PREEMPTED", "TIMEOUT"})


Submit = Callable[[str, pathlib.Path], tuple[str, str]]


@pytest.fixture
def submit(slurm_conf: str) -> Iterator[Submit]:
    """sbatch a shell line (no requeue, a fresh job name); every job it made is cancelled afterwards."""
    made: list[str] = []

    def submit(script: str, output: pathlib.Path) -> tuple[str, str]:
        name = f"li-test-{uuid.uuid4().hex[:12]}"
        result = slurm(slurm_conf, "sbatch", "--parsable", "--no-requeue", f"--job-name={name}",
                       f"--output={output}", f"--chdir={output.parent}", "--wrap", script)
        job_id = result.stdout.strip()
        assert job_id.isdigit(), f"sbatch --parsable printed {result.stdout!r}"
        made.append(job_id)
        return job_id, name

    yield submit
    if made:
        slurm(slurm_conf, "scancel", *made, check=False)


def running(pid: int) -> bool:
    """Whether the process runs (a zombie waiting for its reaper does not)."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def wait_file(path: pathlib.Path, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.1)
    raise AssertionError(f"{path} was not written within {timeout} s")


def wait_gone(pid: int, timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not running(pid):
            return True
        time.sleep(0.1)
    return False


def test_the_cluster_is_configured_as_the_executor_needs(slurm_conf: str) -> None:
    config = slurm(slurm_conf, "scontrol", "show", "config").stdout
    settings = {key.strip(): value.strip() for key, _, value in
                (line.partition("=") for line in config.splitlines()) if value}
    assert settings["ClusterName"] == "lionrun"
    assert settings["JobRequeue"] == "0"
    assert settings["MinJobAge"] == "3600 sec"
    assert settings["ReturnToService"] == "2"
    assert settings["ProctrackType"] in ("proctrack/cgroup", "proctrack/linuxproc")
    node = slurm(slurm_conf, "sinfo", "-h", "-N", "-o", "%N %T").stdout.split()
    assert node[0] == "localhost" and node[1] in ("idle", "mixed", "allocated", "completing")  # up; completing: another test's job ends


def test_a_batch_job_runs_once_and_squeue_and_scontrol_report_it(slurm_conf: str, submit: Submit,
                                                                 tmp_path: pathlib.Path) -> None:
    output = tmp_path / "job.out"
    job_id, name = submit("echo hi", output)
    fields = wait_state(slurm_conf, job_id, ENDED_STATES)
    assert fields["JobState"] == "COMPLETED"
    assert fields["JobName"] == name and fields["JobId"] == job_id
    assert fields["ExitCode"] == "0:0" and fields["Requeue"] == "0" and fields["Restarts"] == "0"
    assert fields["SubmitTime"] != "Unknown"
    assert output.read_text() == "hi\n"
    # An ended job is still listed (MinJobAge), with the same name and submit time.
    line = slurm(slurm_conf, "squeue", "-h", "-t", "all", "-j", job_id, "-o", "%i|%j|%T|%V").stdout.strip()
    assert line == f"{job_id}|{name}|COMPLETED|{fields['SubmitTime']}"


def test_a_job_unknown_to_the_cluster_is_refused_not_reported(slurm_conf: str) -> None:
    result = slurm(slurm_conf, "scontrol", "show", "job", "-o", "999999999", check=False)
    assert result.returncode != 0 and "Invalid job id" in result.stderr
    result = slurm(slurm_conf, "squeue", "-h", "-t", "all", "-j", "999999999", "-o", "%i|%T", check=False)
    assert result.stdout.strip() == ""


def test_scancel_term_full_ends_a_sleeping_job(slurm_conf: str, submit: Submit, tmp_path: pathlib.Path) -> None:
    pid_file = tmp_path / "sleep.pid"
    job_id, _ = submit(f"sleep 300 & echo $! > {pid_file}; wait", tmp_path / "job.out")
    wait_state(slurm_conf, job_id, {"RUNNING"})
    sleeper = int(wait_file(pid_file))
    assert running(sleeper)
    # A signal to a job still PENDING is refused ("Job can not be altered now"); this one runs.
    slurm(slurm_conf, "scancel", "--signal=TERM", "--full", job_id)
    fields = wait_state(slurm_conf, job_id, ENDED_STATES)
    # Slurm does not call a signalled job CANCELLED: the batch shell died of SIGTERM (exit x:15).
    assert fields["JobState"] != "COMPLETED", fields
    assert fields["ExitCode"].endswith(":15"), fields
    assert wait_gone(sleeper), f"pid {sleeper} of job {job_id} outlived it"
    squeue = slurm(slurm_conf, "squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T").stdout.strip()
    assert squeue not in LIVE_STATES and squeue == fields["JobState"]


def test_a_plain_scancel_reads_cancelled(slurm_conf: str, submit: Submit, tmp_path: pathlib.Path) -> None:
    job_id, _ = submit("sleep 300", tmp_path / "job.out")
    wait_state(slurm_conf, job_id, {"RUNNING"})
    slurm(slurm_conf, "scancel", job_id)
    assert wait_state(slurm_conf, job_id, ENDED_STATES)["JobState"] == "CANCELLED"


def test_a_process_that_left_the_job_s_session_ends_with_the_job(slurm_conf: str, submit: Submit,
                                                                 tmp_path: pathlib.Path) -> None:
    config = slurm(slurm_conf, "scontrol", "show", "config").stdout
    if "proctrack/cgroup" not in config:
        pytest.skip("the cluster tracks processes by ancestry (proctrack/linuxproc): a process that "
                    "left the job's session outlives it; see docs/cluster.md")
    pid_file, shell_file = tmp_path / "escaped.pid", tmp_path / "shell.pid"
    script = f'echo $$ > {shell_file}; setsid sh -c "sleep 300 & echo \\$! > {pid_file}; wait" & sleep 300'
    job_id, _ = submit(script, tmp_path / "job.out")
    wait_state(slurm_conf, job_id, {"RUNNING"})
    escaped, shell = int(wait_file(pid_file)), int(wait_file(shell_file))
    assert running(escaped) and os.getsid(escaped) != os.getsid(shell)
    slurm(slurm_conf, "scancel", "--signal=TERM", "--full", job_id)
    wait_state(slurm_conf, job_id, ENDED_STATES)
    assert wait_gone(escaped), f"pid {escaped} left job {job_id}'s session and outlived the job"


def test_domain_slurm_reads_the_real_answers_as_evidence(slurm_conf: str, tmp_path: pathlib.Path) -> None:
    name = f"li-test-{uuid.uuid4().hex[:12]} odd|name"
    answer = slurm(slurm_conf, "sbatch", "--parsable", "--no-requeue", f"--job-name={name}",
                   f"--output={tmp_path / 'job.out'}", "--wrap", "sleep 300").stdout
    parsed = parse_sbatch(answer)
    assert parsed is not None
    job_id = parsed[0]
    try:
        wait_state(slurm_conf, job_id, {"RUNNING"})
        [row] = parse_scontrol(slurm(slurm_conf, "scontrol", "show", "job", "-o", job_id).stdout)
        assert (row.job_id, row.state, row.name) == (job_id, "RUNNING", name)
        recorded = RecordedJob(job_id, row.submit_time)
        squeue = parse_squeue(slurm(slurm_conf, "squeue", "-h", "-t", "all", "-j", job_id,
                                    f"--format={SQUEUE_FORMAT}").stdout)
        assert squeue == (SlurmJob(job_id, "RUNNING", row.submit_time, None, name),)
        assert judge_job(recorded, [row, *squeue]).code == "job_alive"
    finally:
        slurm(slurm_conf, "scancel", job_id)
    wait_state(slurm_conf, job_id, {"CANCELLED"})
    [row] = parse_scontrol(slurm(slurm_conf, "scontrol", "show", "job", "-o", job_id).stdout)
    finding = judge_job(recorded, [row])
    assert (finding.code, finding.conclusive, row.state) == ("job_ended", True, "CANCELLED")
    assert judge_job(RecordedJob(job_id, "2000-01-01T00:00:00"), [row]).code == "job_id_reused"
    unknown = slurm(slurm_conf, "scontrol", "show", "job", "-o", "999999999", check=False).stdout
    assert judge_job(RecordedJob("999999999", row.submit_time), parse_scontrol(unknown)).code == "job_unknown"
