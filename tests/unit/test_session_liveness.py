"""The Observer on fakes: a run lives while any member of its runner's session lives."""

from __future__ import annotations

from pathlib import Path

from tests.builders import RunState, a_run, scripted_incarnation
from tests.worlds import make_world

RUNNER, LEG, SLEEP = 5151, 5160, 5161


def orphaned_work(world, **fields):
    """A started run whose runner was SIGKILLed while its leg and the leg's child still run."""
    world.prober.start(RUNNER, create_time=1000.0)
    run = a_run(world.store, world.clock.now(), RunState.STARTED, pid=RUNNER,
                  incarnation=scripted_incarnation(world.prober, RUNNER), **fields)
    world.prober.start(LEG, create_time=1000.5, session=RUNNER)
    world.prober.start(SLEEP, create_time=1000.6, session=RUNNER)
    world.prober.kill(RUNNER)
    return run


def status(world, run_id: str) -> dict:
    return world.container.reads.reads().status(run_id)


def test_a_run_whose_runner_is_gone_but_whose_work_lives_is_alive_and_never_reaped(world) -> None:
    run = orphaned_work(world)
    for _ in range(3):
        data = status(world, run.run_id)
        assert (data["status"], data["terminal"], data["outcome"], data["alive"]) == ("running", False, None, True)
        assert data["possibly_orphaned"] is False
    assert world.store.read(run.run_id) == run


def test_a_zombie_runner_whose_work_lives_is_alive(world) -> None:
    world.prober.start(RUNNER, create_time=1000.0)
    run = a_run(world.store, world.clock.now(), RunState.STARTED, pid=RUNNER, incarnation=scripted_incarnation(world.prober, RUNNER))
    world.prober.start(LEG, create_time=1000.5, session=RUNNER)
    world.prober.zombify(RUNNER)
    assert (status(world, run.run_id)["terminal"], status(world, run.run_id)["alive"]) == (False, True)


def test_once_the_last_member_is_gone_the_run_is_reaped_as_before(world) -> None:
    run = orphaned_work(world)
    world.prober.kill(LEG)
    assert status(world, run.run_id)["terminal"] is False
    world.prober.kill(SLEEP)
    data = status(world, run.run_id)
    assert (data["status"], data["terminal"], data["outcome"], data["reason_code"]) == (
        "exited", True, "indeterminate", "process_gone_without_outcome")
    evidence = world.store.read(run.run_id).terminal_evidence
    assert evidence["finding"] == "pid_absent" and evidence["observed"]["session_members"] == []


def test_a_recycled_runner_pid_never_lends_its_new_session_to_the_run(world) -> None:
    world.prober.start(RUNNER, create_time=1000.0)
    run = a_run(world.store, world.clock.now(), RunState.STARTED, pid=RUNNER, incarnation=scripted_incarnation(world.prober, RUNNER))
    world.prober.kill(RUNNER)
    world.prober.start(RUNNER, create_time=4000.0)  # a setsid'd decoy took the freed pid ...
    world.prober.start(LEG, create_time=4000.5, session=RUNNER)  # ... and has a child of its own
    data = status(world, run.run_id)
    assert (data["terminal"], data["reason_code"]) == (True, "process_gone_pid_recycled")
    assert {RUNNER, LEG} <= set(world.prober.processes)


def test_zombie_members_do_not_keep_a_run_alive(world) -> None:
    run = orphaned_work(world)
    world.prober.zombify(LEG)
    world.prober.zombify(SLEEP)
    assert status(world, run.run_id)["outcome"] == "indeterminate"


def test_a_process_older_than_the_runner_in_its_session_number_is_not_the_runs(world) -> None:
    world.prober.start(RUNNER, create_time=1000.0)
    run = a_run(world.store, world.clock.now(), RunState.STARTED, pid=RUNNER, incarnation=scripted_incarnation(world.prober, RUNNER))
    world.prober.kill(RUNNER)
    world.prober.start(LEG, create_time=900.0, session=RUNNER)  # cannot be ours: it predates the runner
    assert status(world, run.run_id)["terminal"] is True


def test_a_process_table_that_cannot_be_read_leaves_the_run_unjudged(world) -> None:
    run = orphaned_work(world)
    world.prober.table_readable = False
    data = status(world, run.run_id)
    assert (data["terminal"], data["alive"], data["possibly_orphaned"]) == (False, None, True)
    assert world.store.read(run.run_id) == run


def test_wait_agrees_that_the_run_is_pending_while_its_work_lives(world) -> None:
    run = orphaned_work(world)
    answer = world.container.waits.waiter().wait([run.run_id], max_wait=0).to_data()
    assert answer["pending"] == [run.run_id] and answer["stopped_without_end"] == []


def test_listing_a_thousand_healthy_runs_scans_no_process_table(tmp_path: Path) -> None:
    world = make_world("memory", str(tmp_path))
    for n in range(1000):
        world.prober.start(20000 + n, create_time=1000.0)
        a_run(world.store, world.clock.now(), RunState.STARTED, pid=20000 + n, incarnation=scripted_incarnation(world.prober, 20000 + n))
    listing = world.container.reads.reads().listing(limit=1000)
    assert len(listing["runs"]) == 1000 and all(not row["terminal"] for row in listing["runs"])
    assert world.prober.scans == 0


def test_a_gone_runner_costs_one_scan_per_observation(world) -> None:
    run = orphaned_work(world)
    status(world, run.run_id)
    assert world.prober.scans == 1


def test_a_confined_run_s_scan_spares_what_its_broker_started_as_the_kill_does(tmp_path: Path) -> None:
    """A run whose work was confined (the store hidden) has its session scanned with the broker's
    children cut out, as `li job kill` cuts them: a child run it submitted is not its process."""
    for confinement, spared in (("store_hidden", True), ("none", False)):
        world = make_world("fs", str(tmp_path / confinement))
        run = orphaned_work(world, confinement=confinement)
        status(world, run.run_id)
        assert world.prober.scanned_confined == [spared]
