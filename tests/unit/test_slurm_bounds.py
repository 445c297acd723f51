"""Over a scripted cluster, on both worlds: a read never asks the cluster more
than it needs, and never for longer than what is left of its window.

A recorded end is answered from the store alone; a listing asks the cluster once, whatever the
number of Slurm rows; a wait gives every question at most what is left of its window; a cluster
that does not answer leaves every run as recorded (advisory `cluster_unreachable`). The runner's
reading of Slurm's stop (`announced_stop`) is pure and tested here too.
"""

from __future__ import annotations

import pytest

from lionrun.adapters.fakes import ScriptedCluster
from lionrun.application.wait import Waiter
from lionrun.domain.slurm import SlurmJob, announced_stop, parse_scontrol
from tests.unit.test_slurm_executor import attach, slurm_submit
from tests.unit.test_slurm_executor import cluster as cluster  # noqa: F401 - the fixture, reused


def live_runs(world, cluster: ScriptedCluster, count: int) -> list[str]:
    runs = []
    for index in range(count):
        run_id = slurm_submit(world).run_id
        cluster.state(str(index + 1), "RUNNING")
        assert attach(world, run_id, env={"SLURM_JOB_ID": str(index + 1)}, pid=52000 + index).refused is None
        runs.append(run_id)
    return runs


def test_a_recorded_end_of_a_slurm_run_is_answered_without_asking_the_cluster(world, cluster) -> None:
    [run_id] = live_runs(world, cluster, 1)
    world.store.update(run_id, lambda r: r.evolve(status="completed", outcome="succeeded", exit_code=0,
                                                  finished_at=r.submitted_at, terminal_source="runner"))
    cluster.asked.clear()
    cluster.reachable = False
    status = world.container.reads.reads().status(run_id)
    assert (status["status"], status["finding"]) == ("completed", None)
    assert cluster.asked == []


def test_a_listing_asks_the_cluster_once_whatever_the_number_of_rows(world, cluster) -> None:
    runs = live_runs(world, cluster, 4)
    cluster.state("2", "FAILED", "0:9")  # judged ended by that one answer, and reaped
    cluster.asked.clear()
    rows = {row["run_id"]: row for row in world.container.reads.reads().listing()["runs"]}
    assert [what for what, _, _ in cluster.asked] == ["all_jobs"]
    assert [rows[run_id]["terminal"] for run_id in runs] == [False, True, False, False]
    cluster.asked.clear()
    cluster.reachable = False
    rows = {row["run_id"]: row for row in world.container.reads.reads().listing()["runs"]}
    assert len(cluster.asked) == 1 and [rows[r]["status"] for r in runs] == ["running", "exited", "running", "running"]


def test_a_wait_gives_the_cluster_at_most_what_is_left_of_its_window(world, cluster) -> None:
    runs = live_runs(world, cluster, 3)
    cluster.asked.clear()
    cluster.reachable = False
    result = Waiter(world.container.reads.observer(), world.clock).wait(runs, 5, 1)
    assert result.partition.pending and not result.partition.all_terminal
    timeouts = [timeout for what, _, timeout in cluster.asked]
    assert timeouts and all(timeout is not None and 0 <= timeout <= 5 for timeout in timeouts), timeouts
    assert {seen.observed.finding.code for seen in result.entries} == {"cluster_unreachable"}


SCONTROL = ("JobId=7 JobName=20260101T000000-abcdef UserId=u(1) JobState={state} Reason={reason} "
            "ExitCode=0:0 TimeLimit={limit} SubmitTime=2026-01-01T00:00:00 WorkDir=/w")


def job(state: str, reason: str = "None", limit: str = "00:01:00") -> tuple[SlurmJob, ...]:
    return parse_scontrol(SCONTROL.format(state=state, reason=reason, limit=limit))


@pytest.mark.parametrize("state, reason, status", [
    ("RUNNING", "TimeLimit", "timed_out"),    # the SIGTERM of a time limit: Slurm says why at once
    ("TIMEOUT", "TimeLimit", "timed_out"),
    ("COMPLETING", "TimeLimit", "timed_out"),
    ("COMPLETING", "None", "cancelled"),     # an outside scancel, while Slurm ends the job
    ("CANCELLED", "None", "cancelled"),
    ("PREEMPTED", "None", "cancelled"),
    ("RUNNING", "None", None),               # a signal only (li's own kill): the runner's verdict stands
    ("PENDING", "None", None),
])
def test_the_runner_reads_why_slurm_stopped_its_job(state: str, reason: str, status: str | None) -> None:
    stop = announced_stop("7", job(state, reason))
    assert (None if stop is None else stop.status) == status
    if stop is not None:
        assert stop.evidence["source"] == "slurm" and stop.evidence["state"] == state
        assert ("time_limit" in stop.evidence) == (status == "timed_out")
        if status == "timed_out":
            assert stop.evidence["time_limit"] == "00:01:00"


def test_no_answer_or_another_job_s_rows_say_nothing_of_the_stop() -> None:
    assert announced_stop("7", None) is None
    assert announced_stop("7", ()) is None
    assert announced_stop("8", job("TIMEOUT", "TimeLimit")) is None
    assert job("RUNNING", limit="nonsense words")[0].time_limit is None


def test_the_submit_waits_longer_than_a_reader_for_the_job_s_submit_time(world, cluster) -> None:
    slurm_submit(world)
    [(what, job_id, timeout)] = [asked for asked in cluster.asked if asked[0] == "jobs"]
    assert (what, job_id) == ("jobs", "1") and timeout is not None and timeout >= 20  # its identity
