"""The Slurm executor's use cases over a scripted cluster, on both worlds.

Submit records the job on the `preparing` record (or a spawn failure when sbatch refuses); the
runner Slurm starts attaches by a fenced `preparing` → `started` write, refusing a restarted job or
a record that is no longer its own; `preparing` ages only while no job is recorded; the observer
asks the cluster and reaps on `job_ended` only; kill goes through `scancel`.
"""

from __future__ import annotations

import pytest
from dependency_injector import providers

from lionrun.adapters.fakes import ScriptedCluster
from lionrun.adapters.slurm import batch_start
from lionrun.application.batch import BatchAttach
from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.domain.lifecycle import PREPARING_THRESHOLD_SECONDS, derive
from lionrun.domain.request import invalid, parse_executor, parse_slurm_args
from tests.unit.test_submit_service import request, submitter

RUNNER_ENV = {"SLURM_JOB_ID": "1", "SLURM_RESTART_COUNT": "0", "SLURM_CLUSTER_NAME": "testcluster"}


@pytest.fixture
def cluster(world) -> ScriptedCluster:
    scripted = ScriptedCluster()
    world.container.core.cluster.override(providers.Object(scripted))
    return scripted


def slurm_submit(world, **fields: object):
    return submitter(world).submit(request(executor="slurm", **fields))


def attach(world, run_id: str, env: dict[str, str] | None = None, pid: int = 52000):
    world.prober.start(pid, 2000.0)
    return BatchAttach(world.store, world.prober, world.clock).attach(run_id, batch_start(env or RUNNER_ENV), pid, pid)


def observe(world, run_id: str):
    return world.container.reads.observer().observe(run_id)


# --- submit -------------------------------------------------------------------------------------

def test_a_slurm_submit_records_the_job_on_the_preparing_record(world, cluster) -> None:
    handle = slurm_submit(world, partition="debug", slurm_args=("--time=10",))
    record = world.store.read(handle.run_id)
    assert record.spawn_state == "preparing" and record.executor == "slurm" and record.pid is None
    assert (record.engine.executor, record.engine.job_id, record.engine.submit_time) == (
        "slurm", "1", ScriptedCluster.SUBMIT_TIME)
    assert handle.pid is None and handle.status == "running" and handle.terminal is False
    [batch] = cluster.submitted
    assert batch.run_id == handle.run_id and batch.argv[-1] == handle.run_id
    assert batch.partition == "debug" and tuple(batch.options) == ("--time=10",)
    assert batch.env["LI_RUN_ID"] == handle.run_id
    assert world.spawner.spawned == []  # no local child


def test_sbatch_refusing_is_a_spawn_failure_the_producer_records(world, cluster) -> None:
    cluster.refuse_submit = "sbatch exited 1: invalid partition"
    with pytest.raises(ContractError) as caught:
        slurm_submit(world)
    assert caught.value.kind == ErrorKind.UNAVAILABLE
    run_id = caught.value.detail["run_id"]
    record = world.store.read(run_id)
    assert record.spawn_state == "failed" and record.outcome == "failed"
    assert record.reason_code == "spawn_failed" and record.engine is None
    assert "invalid partition" in record.extra["spawn_error"]


def test_an_unusable_cluster_is_refused_before_anything_is_written(world, cluster) -> None:
    cluster.problems = ["the Slurm tools sbatch are not on PATH"]
    with pytest.raises(ContractError) as caught:
        slurm_submit(world)
    assert caught.value.kind == ErrorKind.UNAVAILABLE and "sbatch" in caught.value.message
    assert list(world.store.run_ids()) == []


def test_a_local_submit_is_unchanged(world, cluster) -> None:
    handle = submitter(world).submit(request())
    record = world.store.read(handle.run_id)
    assert record.executor is None and record.engine is None and record.spawn_state == "started"
    assert cluster.submitted == []


# --- the runner's attach ------------------------------------------------------------------------

def test_the_runner_attaches_its_incarnation_from_preparing_to_started(world, cluster) -> None:
    run_id = slurm_submit(world).run_id
    result = attach(world, run_id)
    assert result.batch and result.refused is None
    record = world.store.read(run_id)
    assert record.spawn_state == "started" and record.pid == 52000 and record.started_at is not None
    inc = record.incarnation
    assert (inc.host_id, inc.pid, inc.create_time, inc.job_id, inc.restart_count) == ("host-a", 52000, 2000.0, "1", 0)
    assert record.engine.job_id == "1" and record.engine.cluster == "testcluster"
    assert record.engine.submit_time == ScriptedCluster.SUBMIT_TIME


@pytest.mark.parametrize("env, why", [
    ({**RUNNER_ENV, "SLURM_RESTART_COUNT": "1"}, "restarted"),
    ({**RUNNER_ENV, "SLURM_RESTART_COUNT": "x"}, "restarted"),
    ({**RUNNER_ENV, "SLURM_JOB_ID": "2"}, "not this job 2"),
    ({"SLURM_RESTART_COUNT": "0"}, "no SLURM_JOB_ID"),
])
def test_a_runner_that_is_not_this_attempt_does_not_run(world, cluster, env, why) -> None:
    run_id = slurm_submit(world).run_id
    result = attach(world, run_id, env)
    assert result.refused is not None and why in result.refused
    assert world.store.read(run_id).spawn_state == "preparing"


def test_a_second_runner_of_an_attached_run_does_not_run(world, cluster) -> None:
    run_id = slurm_submit(world).run_id
    assert attach(world, run_id).refused is None
    before = world.store.read(run_id)
    second = attach(world, run_id, pid=52001)
    assert second.refused is not None and "no longer preparing" in second.refused
    assert world.store.read(run_id) == before


def test_a_runner_finding_a_recorded_spawn_failure_does_not_run(world, cluster) -> None:
    run_id = slurm_submit(world).run_id
    world.store.update(run_id, lambda r: r.evolve(spawn_state="failed", status="failed", outcome="failed",
                                                  finished_at=r.submitted_at))
    assert "no longer preparing" in attach(world, run_id).refused


def test_the_runner_may_attach_before_the_submitter_recorded_the_job(world, cluster) -> None:
    run_id = slurm_submit(world).run_id
    world.store.update(run_id, lambda r: r.evolve(engine=None))
    assert attach(world, run_id).refused is None
    record = world.store.read(run_id)
    assert record.spawn_state == "started" and record.engine.job_id == "1"


def test_a_local_run_needs_no_attach(world, cluster) -> None:
    run_id = submitter(world).submit(request()).run_id
    result = attach(world, run_id)
    assert not result.batch and result.refused is None


# --- phases -------------------------------------------------------------------------------------

def test_a_queued_job_stays_preparing_without_ageing_into_unresolved(world, cluster) -> None:
    run_id = slurm_submit(world).run_id
    world.clock.advance(PREPARING_THRESHOLD_SECONDS * 6)
    observed = observe(world, run_id)
    d = observed.derivation
    assert observed.finding.code == "job_queued"
    assert (d.status, d.terminal, d.aged_preparing, d.possibly_orphaned) == ("running", False, False, False)
    # Without a job id the same age is an unresolved spawn.
    record = world.store.read(run_id).evolve(engine=None)
    assert derive(record, None, world.clock.now()).aged_preparing is True


# --- evidence and the reap ----------------------------------------------------------------------

def started(world, cluster) -> str:
    run_id = slurm_submit(world).run_id
    cluster.state("1", "RUNNING")
    assert attach(world, run_id).refused is None
    return run_id


def test_a_running_job_is_alive_and_a_purged_or_unreachable_one_inconclusive(world, cluster) -> None:
    run_id = started(world, cluster)
    world.prober.kill(52000)  # the process probe is not what judges a Slurm run
    assert observe(world, run_id).finding.code == "job_alive"
    cluster.purge("1")
    observed = observe(world, run_id)
    assert observed.finding.code == "job_unknown" and observed.derivation.terminal is False
    assert observed.derivation.stopped is False and observed.derivation.status == "running"
    cluster.reachable = False
    observed = observe(world, run_id)
    assert observed.finding.code == "cluster_unreachable" and observed.derivation.terminal is False
    assert world.store.read(run_id).end_recorded is False


@pytest.mark.parametrize("state", ["NODE_FAIL", "PREEMPTED"])
def test_an_unreliable_state_is_inconclusive(world, cluster, state) -> None:
    run_id = started(world, cluster)
    cluster.state("1", state)
    assert observe(world, run_id).derivation.terminal is False


def test_an_ended_job_is_reaped_indeterminate_with_slurm_s_state_as_evidence(world, cluster) -> None:
    run_id = started(world, cluster)
    cluster.state("1", "FAILED", "0:9")
    observed = observe(world, run_id)
    record = world.store.read(run_id)
    assert (record.status, record.outcome, record.terminal_source) == ("exited", "indeterminate", "reaper")
    assert record.reason_code == "job_ended_without_outcome"
    evidence = record.terminal_evidence
    assert evidence["finding"] == "job_ended"
    assert evidence["recorded"]["job_id"] == "1"
    assert evidence["observed"] == [{"job_id": "1", "state": "FAILED", "submit_time": ScriptedCluster.SUBMIT_TIME,
                                     "exit_code": "0:9", "reason": None}]
    assert observed.derivation.terminal is True and observed.derivation.outcome == "indeterminate"


def test_a_job_id_reused_after_a_state_reset_is_not_this_run_s_end(world, cluster) -> None:
    run_id = started(world, cluster)
    cluster.rows["1"] = cluster._job("1", "COMPLETED", "2030-01-01T00:00:00", "0:0", "other")
    assert observe(world, run_id).finding.code == "job_id_reused"
    assert world.store.read(run_id).end_recorded is False


def test_a_recorded_end_wins_over_any_slurm_state(world, cluster) -> None:
    run_id = started(world, cluster)
    world.store.update(run_id, lambda r: r.evolve(status="completed", outcome="succeeded", exit_code=0,
                                                  finished_at=r.submitted_at, terminal_source="runner"))
    cluster.state("1", "FAILED", "1:0")
    d = observe(world, run_id).derivation
    assert (d.status, d.outcome) == ("completed", "succeeded")


def test_a_job_that_ended_before_its_runner_attached_is_reaped_from_preparing(world, cluster) -> None:
    run_id = slurm_submit(world).run_id
    cluster.state("1", "CANCELLED")
    observe(world, run_id)
    record = world.store.read(run_id)
    assert (record.outcome, record.reason_code) == ("indeterminate", "job_ended_before_start")


# --- kill ---------------------------------------------------------------------------------------

def kill(world, run_id: str) -> dict[str, object]:
    return world.container.reads.killer(grace=0.0).kill(run_id)


def test_kill_of_a_running_job_signals_it_through_scancel(world, cluster) -> None:
    run_id = started(world, cluster)
    answer = kill(world, run_id)
    assert answer["action"] == "signalled"
    assert cluster.cancels[0] == ("1", True)  # scancel --signal=TERM --full
    assert world.store.read(run_id).kill_requested_at is not None
    assert world.signaller.signals == []  # no local signal: the cluster is the boundary


def test_kill_of_a_job_still_running_after_the_grace_ends_it(world, cluster) -> None:
    run_id = started(world, cluster)
    cluster.on_cancel = lambda job_id, terminate: None  # the TERM is ignored: the job keeps running
    assert kill(world, run_id)["action"] == "signalled"
    assert cluster.cancels == [("1", True), ("1", False)]


def test_kill_of_a_queued_job_cancels_it_and_the_reap_says_cancelled(world, cluster) -> None:
    run_id = slurm_submit(world).run_id
    answer = kill(world, run_id)
    assert answer["action"] == "signalled" and cluster.cancels == [("1", False)]
    record = world.store.read(run_id)
    assert (record.status, record.outcome) == ("cancelled", "cancelled")


def test_kill_of_an_ended_job_signals_nothing_and_records_nothing(world, cluster) -> None:
    run_id = started(world, cluster)
    cluster.state("1", "COMPLETED", "0:0")
    cluster.purge("1")
    answer = kill(world, run_id)
    assert answer["action"] == "no_process" and cluster.cancels == []
    assert world.store.read(run_id).kill_requested_at is None


def test_kill_with_the_cluster_unreachable_records_the_request_for_the_runner(world, cluster) -> None:
    run_id = started(world, cluster)
    cluster.reachable = False
    answer = kill(world, run_id)
    assert answer["action"] == "requested" and answer["terminal"] is False
    assert world.store.read(run_id).kill_requested_at is not None
    assert world.signaller.signals == []


def test_kill_of_a_queued_run_with_the_cluster_unreachable_is_honoured_when_the_runner_starts(world, cluster) -> None:
    run_id = slurm_submit(world).run_id
    cluster.reachable = False
    assert kill(world, run_id)["action"] == "no_process"
    assert world.store.read(run_id).kill_requested_at is not None


# --- the request ---------------------------------------------------------------------------------

def test_the_executor_and_slurm_options_are_validated() -> None:
    assert parse_executor(None) == "local" and parse_executor("slurm") == "slurm"
    with pytest.raises(ContractError):
        parse_executor("kubernetes")
    assert parse_slurm_args(["--time=10", "--mem=1G", "-c2"]) == ("--time=10", "--mem=1G", "-c2")
    for bad in (["--requeue"], ["--wrap=rm -rf /"], ["-Jname"], ["--job-name=x"], ["hostname"], ["-pdebug"],
                ["--array=1-3"], ["--output=/tmp/x"]):
        with pytest.raises(ContractError):
            parse_slurm_args(bad)
    assert invalid("x").kind == ErrorKind.INVALID_INPUT


def test_the_request_keeps_its_executor_through_request_json() -> None:
    from lionrun.domain.request import RunRequest

    original = request(executor="slurm", partition="debug", slurm_args=("--time=5",))
    import json

    data = json.loads(json.dumps(original.to_dict()))
    again = RunRequest.from_dict(data, original.instruction)
    assert (again.executor, again.partition, again.slurm_args) == ("slurm", "debug", ("--time=5",))
    old = {k: v for k, v in data.items() if k not in ("executor", "partition", "slurm_args")}
    assert RunRequest.from_dict(old, "x").executor == "local"


def test_an_old_preparing_record_whose_job_the_cluster_no_longer_knows_is_flagged_never_ended(world, cluster) -> None:
    run_id = slurm_submit(world).run_id
    cluster.purge("1")
    assert observe(world, run_id).derivation.aged_preparing is False  # young: just not known yet
    world.clock.advance(PREPARING_THRESHOLD_SECONDS + 1)
    d = observe(world, run_id).derivation
    assert (d.aged_preparing, d.possibly_orphaned, d.terminal, d.status) == (True, True, False, "running")
    assert world.store.read(run_id).end_recorded is False


def test_status_names_the_slurm_job(world, cluster) -> None:
    run_id = started(world, cluster)
    data = world.container.reads.reads().status(run_id)
    assert data["job"] == {"executor": "slurm", "cluster": "testcluster", "job_id": "1"}
    assert data["pid"] == 52000 and data["alive"] is True
    local = submitter(world).submit(request()).run_id
    assert world.container.reads.reads().status(local)["job"] is None


def test_a_preparing_record_without_a_job_still_ages(world, cluster) -> None:
    run_id = slurm_submit(world).run_id
    world.store.update(run_id, lambda r: r.evolve(engine=None))
    world.clock.advance(PREPARING_THRESHOLD_SECONDS + 1)
    assert observe(world, run_id).derivation.aged_preparing is True
