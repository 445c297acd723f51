"""`li job prune` on both worlds: only runs that recorded an end are removed, each under its lock."""

from __future__ import annotations

from datetime import timedelta

import pytest

from lionrun.application.prune import Pruner
from lionrun.domain.run import FAILED, PREPARING, STARTED, Incarnation, Run, iso

DAY = 86400.0


def add_run(world, *, status: str = "running", spawn_state: str | None = STARTED, pid: int | None = None,
            finished_ago: float | None = None, host_id: str = "host-a", create_time: float | None = 1000.0,
            submitted_ago: float = 0.0) -> str:
    """A record written straight into the world's store, as the lifecycle authority would have."""
    now = world.clock.now()
    run_id = world.store.reserve(now - timedelta(seconds=submitted_ago))
    incarnation = None if pid is None else Incarnation(host_id, "boot-1", pid, create_time, pid)
    finished = None if finished_ago is None else iso(now - timedelta(seconds=finished_ago))
    world.store.create(Run(
        run_id=run_id, kind="agent", status=status, submitted_at=iso(now - timedelta(seconds=submitted_ago)),
        spawn_state=spawn_state, pid=pid, incarnation=incarnation, finished_at=finished,
        outcome="succeeded" if finished and status == "completed" else None,
    ))
    return run_id


def ids(world) -> set[str]:
    return set(world.store.run_ids())


def reasons(report) -> dict[str, str]:
    return {k.run_id: k.reason for k in report.kept}


def test_a_run_that_recorded_an_end_is_removed(world) -> None:
    ended = add_run(world, status="completed", pid=41, finished_ago=10)
    report = world.container.upkeep.pruner().prune()
    assert report.removed == [ended] and report.kept == []
    assert ended not in ids(world)


def test_prune_never_removes_a_run_that_has_not_ended(world) -> None:
    running = add_run(world, pid=51)
    world.prober.start(51, create_time=1000.0)
    fresh = add_run(world, status="preparing", spawn_state=PREPARING, submitted_ago=5)
    aged = add_run(world, status="preparing", spawn_state=PREPARING, submitted_ago=30 * DAY)
    denied = add_run(world, pid=52)
    world.prober.deny(52)
    foreign = add_run(world, pid=53, host_id="host-b")
    unidentified = add_run(world, pid=54, create_time=None)
    world.prober.start(54)
    world.clock.advance(400 * DAY)
    report = world.container.upkeep.pruner().prune(older_than_days=0)
    assert report.removed == []
    assert reasons(report) == dict.fromkeys([running, fresh, aged, denied, foreign, unidentified], "not_ended")
    assert ids(world) == {running, fresh, aged, denied, foreign, unidentified}
    assert all(world.store.read(i).finished_at is None for i in ids(world))


def test_a_conclusively_dead_started_run_is_reaped_and_then_prunable(world) -> None:
    orphan = add_run(world, pid=61)  # pid 61 was never started: conclusively absent
    report = world.container.upkeep.pruner().prune()
    assert report.removed == [orphan]


def test_a_conclusively_dead_run_reaped_just_now_is_too_recent_for_a_day_threshold(world) -> None:
    orphan = add_run(world, pid=62)
    report = world.container.upkeep.pruner().prune(older_than_days=1)
    assert reasons(report) == {orphan: "ended_recently"}
    assert world.store.read(orphan).terminal_source == "reaper"


def test_older_than_keeps_runs_that_ended_recently(world) -> None:
    old = add_run(world, status="completed", pid=71, finished_ago=3 * DAY)
    recent = add_run(world, status="failed", pid=72, finished_ago=3600)
    report = world.container.upkeep.pruner().prune(older_than_days=2)
    assert report.removed == [old]
    assert reasons(report) == {recent: "ended_recently"}
    assert ids(world) == {recent}


def test_a_fractional_day_threshold_is_honoured(world) -> None:
    ended = add_run(world, status="completed", pid=73, finished_ago=7200)
    assert world.container.upkeep.pruner().prune(older_than_days=1 / 24).removed == [ended]


def test_a_spawn_failure_is_an_end_dated_by_its_submission(world) -> None:
    failed = add_run(world, status="failed", spawn_state=FAILED, submitted_ago=2 * DAY)
    assert world.container.upkeep.pruner().prune(older_than_days=1).removed == [failed]


def test_a_dry_run_lists_what_would_go_and_removes_nothing(world) -> None:
    ended = add_run(world, status="completed", pid=81, finished_ago=10)
    running = add_run(world, pid=82)
    world.prober.start(82)
    report = world.container.upkeep.pruner().prune(dry_run=True)
    assert report.to_wire() == {
        "removed": [ended], "dry_run": True,
        "kept": [{"run_id": running, "reason": "not_ended", "detail": "status running"}],
    }
    assert ids(world) == {ended, running}


def test_an_unreadable_record_is_kept_and_reported(world) -> None:
    broken = add_run(world, status="completed", pid=91, finished_ago=10)
    if world.kind == "memory":
        world.store.put_raw(broken, "{not json")
    else:
        with open(f"{world.store.run_dir(broken)}/record.json", "w") as handle:
            handle.write("{not json")
    report = world.container.upkeep.pruner().prune()
    assert report.removed == []
    assert reasons(report) == {broken: "record_unusable"}
    assert "malformed" in (report.kept[0].detail or "")


def test_an_empty_store_prunes_nothing(world) -> None:
    assert world.container.upkeep.pruner().prune().to_wire() == {"removed": [], "kept": [], "dry_run": False}


def fs_world(tmp_path):
    from tests.worlds import make_world

    return make_world("fs", str(tmp_path))


def test_a_run_whose_lock_is_held_is_kept_as_busy(tmp_path) -> None:
    from filelock import FileLock

    world = fs_world(tmp_path)
    ended = add_run(world, status="completed", pid=95, finished_ago=10)
    pruner = Pruner(world.store, world.container.reads.observer(), world.clock, lock_timeout=0.05)
    with FileLock(f"{world.store.run_dir(ended)}/record.lock"):
        report = pruner.prune()
    assert reasons(report) == {ended: "busy"}
    assert world.store.read(ended).finished_at is not None


def test_a_folder_reserved_without_a_record_is_kept(tmp_path) -> None:
    world = fs_world(tmp_path)
    reserved = world.store.reserve(world.clock.now())
    report = world.container.upkeep.pruner().prune()
    assert reasons(report) == {reserved: "no_record"}
    assert (tmp_path / "li-home" / "runs" / reserved).is_dir()


def test_removal_rechecks_the_record_under_the_lock(world) -> None:
    """A record whose end vanished between observation and removal (never legal) is not removed."""
    ended = add_run(world, status="completed", pid=96, finished_ago=10)
    pruner = world.container.upkeep.pruner()
    real_update = world.store.update

    def update_after_a_rewrite(run_id, change, lock_timeout=10.0):
        world.store.update = real_update
        real_update(run_id, lambda r: r.evolve(finished_at=None, status="running"))
        return real_update(run_id, change, lock_timeout)

    world.store.update = update_after_a_rewrite
    report = pruner.prune()
    assert report.removed == [] and reasons(report) == {ended: "not_ended"}
    assert ended in ids(world)


@pytest.mark.parametrize("days", [0.0, 1.0])
def test_removed_runs_leave_no_folder_behind(tmp_path, days: float) -> None:
    world = fs_world(tmp_path)
    ended = add_run(world, status="completed", pid=97, finished_ago=2 * DAY)
    world.container.upkeep.pruner().prune(older_than_days=days)
    assert not (tmp_path / "li-home" / "runs" / ended).exists()



def notified_run(world) -> str:
    """An ended run whose notice was claimed and has no recorded outcome yet."""
    from lionrun.application.notify import UNKNOWN_OUTCOME

    run_id = add_run(world, status="completed", pid=61, finished_ago=1)
    world.store.update(run_id, lambda r: r.evolve(notify=["notify-me"], delivery=UNKNOWN_OUTCOME))
    return run_id


def test_a_run_whose_notice_is_still_being_delivered_is_kept_until_it_settles(world) -> None:
    from lionrun.domain.run import DeliveryValue

    run_id = notified_run(world)
    report = world.container.upkeep.pruner().prune()
    assert report.removed == [] and reasons(report) == {run_id: "notice_in_flight"}
    world.store.update(run_id, lambda r: r.evolve(delivery=DeliveryValue(True, True, 0)))
    assert world.container.upkeep.pruner().prune().removed == [run_id]


def test_a_notice_whose_sender_died_long_ago_does_not_pin_the_run(world) -> None:
    from lionrun.application.prune import NOTICE_GRACE_SECONDS

    run_id = notified_run(world)
    world.clock.advance(NOTICE_GRACE_SECONDS + 1)
    assert world.container.upkeep.pruner().prune().removed == [run_id]


def test_a_pruned_run_cannot_be_brought_back_by_a_late_writer(world) -> None:
    from lionrun.application.ports import RunNotFound

    ended = add_run(world, status="completed", pid=98, finished_ago=10)
    assert world.container.upkeep.pruner().prune().removed == [ended]
    with pytest.raises(RunNotFound):
        world.store.update(ended, lambda r: r.evolve(kill_requested_at=r.finished_at))
    assert ids(world) == set()
    assert world.container.upkeep.pruner().prune().to_wire() == {"removed": [], "kept": [], "dry_run": False}


def test_prune_leaves_neither_the_run_nor_any_trash_and_sweeps_what_a_killed_prune_left(tmp_path) -> None:
    import os

    world = fs_world(tmp_path)
    runs = tmp_path / "li-home" / "runs"
    interrupted = add_run(world, status="completed", pid=99, finished_ago=10)
    os.rename(runs / interrupted, runs / f".trash-{interrupted}-deadbeef")  # renamed, never deleted
    ended = add_run(world, status="failed", pid=100, finished_ago=10)
    report = world.container.upkeep.pruner().prune()
    assert report.removed == [ended] and report.kept == []
    assert os.listdir(runs) == []


def test_a_prune_that_removes_nothing_still_sweeps_what_a_killed_prune_left(tmp_path) -> None:
    import os

    world = fs_world(tmp_path)
    runs = tmp_path / "li-home" / "runs"
    interrupted = add_run(world, status="completed", pid=99, finished_ago=10)
    os.rename(runs / interrupted, runs / f".trash-{interrupted}-deadbeef")
    assert world.container.upkeep.pruner().prune(dry_run=True).removed == []
    assert os.listdir(runs) == [f".trash-{interrupted}-deadbeef"]  # a dry run changes nothing
    assert world.container.upkeep.pruner().prune().to_wire() == {"removed": [], "kept": [], "dry_run": False}
    assert os.listdir(runs) == []
