"""The kill use case on both worlds: it records the request, signals only its own group, never relabels an end."""

from __future__ import annotations

import pytest

from lionrun.adapters.fakes import RecordingSignaller, ScriptedProber
from lionrun.application.kill import Killer
from lionrun.application.ports import Stop
from lionrun.domain.contract import ContractError
from lionrun.domain.run import Incarnation
from tests.builders import RunState, a_run, end, scripted_incarnation


class DyingSignaller(RecordingSignaller):
    """Members that die of the stops listed in `fatal`."""

    def __init__(self, prober: ScriptedProber, fatal: tuple[Stop, ...] = ("terminate", "kill")) -> None:
        super().__init__(prober, fatal)


def killer(world, signaller=None, grace: float = 1.0) -> Killer:
    observer = world.container.reads.observer()
    return Killer(world.store, observer, signaller or world.signaller, world.clock, grace=grace)


def live_run(world, pid: int = 5151, **fields):
    world.prober.start(pid, create_time=1000.0)
    return a_run(world.store, world.clock.now(), RunState.STARTED, pid=pid,
                   incarnation=scripted_incarnation(world.prober, pid), **fields)


def sent(signaller) -> list[tuple[int, Stop]]:
    return list(signaller.signals)


def test_a_live_run_is_signalled_with_sigterm_and_its_kill_request_recorded(world) -> None:
    run = live_run(world)
    signaller = DyingSignaller(world.prober)
    answer = killer(world, signaller).kill(run.run_id)
    assert answer["action"] == "signalled"
    assert sent(signaller) == [(5151, "terminate")]
    record = world.store.read(run.run_id)
    assert record.kill_requested_at == "2026-07-25T17:50:10.000000+00:00"
    assert set(answer) == {"run_id", "action", "status", "terminal", "outcome"}


def test_the_answer_reports_what_the_authority_says_after_the_signal(world) -> None:
    run = live_run(world)
    answer = killer(world, DyingSignaller(world.prober)).kill(run.run_id)
    # the process is conclusively gone and the kill was requested: the first observation reaps it cancelled
    assert (answer["status"], answer["terminal"], answer["outcome"]) == ("cancelled", True, "cancelled")


def test_a_group_that_outlives_the_grace_gets_sigkill(world) -> None:
    run = live_run(world)
    stubborn = DyingSignaller(world.prober, fatal=("kill",))
    answer = killer(world, stubborn, grace=2.0).kill(run.run_id)
    assert answer["action"] == "signalled"
    assert sent(stubborn) == [(5151, "terminate"), (5151, "kill")]
    assert sum(world.clock.naps) >= 2.0


def test_sigkill_is_not_sent_to_a_group_that_died_of_sigterm(world) -> None:
    run = live_run(world)
    signaller = DyingSignaller(world.prober)
    killer(world, signaller, grace=2.0).kill(run.run_id)
    assert "kill" not in [s for _, s in sent(signaller)]
    assert world.clock.naps == []


def test_an_ended_run_is_already_terminal_and_nothing_changes(world) -> None:
    run = live_run(world)
    ended = end(world.store, run.run_id, "completed", "succeeded", now=world.clock.now())
    signaller = DyingSignaller(world.prober)
    answer = killer(world, signaller).kill(run.run_id)
    assert answer == {"run_id": run.run_id, "action": "already_terminal", "status": "completed",
                      "terminal": True, "outcome": "succeeded"}
    assert signaller.signals == []
    assert world.store.read(run.run_id) == ended  # not even kill_requested_at, not even a generation


def test_a_reused_pid_is_never_signalled(world) -> None:
    run = live_run(world)
    world.prober.start(5151, create_time=9999.0)  # the pid now belongs to someone else
    signaller = DyingSignaller(world.prober)
    answer = killer(world, signaller).kill(run.run_id)
    assert answer["action"] == "no_process"
    assert signaller.signals == []
    assert 5151 in world.prober.processes


def test_a_gone_process_is_no_process_and_never_an_error(world) -> None:
    run = live_run(world)
    world.prober.kill(5151)
    answer = killer(world).kill(run.run_id)
    assert answer["action"] == "no_process"
    assert world.signaller.signals == []


def test_a_process_that_ended_on_its_own_is_not_labelled_cancelled_by_a_late_kill(world) -> None:
    run = live_run(world)
    world.prober.kill(5151)
    answer = killer(world).kill(run.run_id)
    assert (answer["action"], answer["status"], answer["outcome"]) == ("no_process", "exited", "indeterminate")
    assert world.store.read(run.run_id).kill_requested_at is None


@pytest.mark.parametrize("case", ["no_identity", "preparing", "access_denied"])
def test_a_leader_that_cannot_be_proven_ours_is_not_signalled(world, case: str) -> None:
    world.prober.start(5151, create_time=1000.0)
    fields: dict = {"pid": 5151}
    if case == "preparing":
        fields = {"spawn_state": "preparing"}
    elif case == "access_denied":
        fields["incarnation"] = scripted_incarnation(world.prober, 5151)
        world.prober.deny(5151)
    run = a_run(world.store, world.clock.now(), RunState.STARTED, **fields)
    answer = killer(world).kill(run.run_id)
    assert answer["action"] == "no_process"
    assert world.signaller.signals == []
    # A kill that signalled nothing writes nothing (a later reap would read the mark as a cancel);
    # only a preparing run keeps the request, which its runner honours when it starts.
    requested = world.store.read(run.run_id).kill_requested_at
    assert (requested is not None) == (case == "preparing")


def test_another_hosts_run_is_never_signalled_its_kill_is_recorded_as_requested(world) -> None:
    # The pid is alive here too: a pid on this host says nothing about another host's run.
    world.prober.start(5151, create_time=1000.0)
    run = a_run(world.store, world.clock.now(), RunState.STARTED, pid=5151,
                incarnation=Incarnation("host-b", "boot-9", 5151, 1000.0, 5151))
    answer = killer(world).kill(run.run_id)
    assert answer["action"] == "requested"
    assert world.signaller.signals == []
    assert world.store.read(run.run_id).kill_requested_at == "2026-07-25T17:50:10.000000+00:00"
    # Not terminal: the owning runner has not acted yet, and this host may not judge it.
    assert (answer["status"], answer["terminal"], answer["outcome"]) == ("running", False, None)


def test_a_second_request_of_another_hosts_run_keeps_the_first_and_still_says_requested(world) -> None:
    run = a_run(world.store, world.clock.now(), RunState.STARTED, pid=5151,
                incarnation=Incarnation("host-b", "boot-9", 5151, 1000.0, 5151))
    killer(world).kill(run.run_id)
    first = world.store.read(run.run_id).kill_requested_at
    world.clock.advance(5)
    assert killer(world).kill(run.run_id)["action"] == "requested"
    assert world.store.read(run.run_id).kill_requested_at == first


def test_another_hosts_run_that_has_ended_is_already_terminal_and_nothing_is_recorded(world) -> None:
    run = a_run(world.store, world.clock.now(), RunState.STARTED, pid=5151,
                incarnation=Incarnation("host-b", "boot-9", 5151, 1000.0, 5151))
    end(world.store, run.run_id, "completed", "succeeded", now=world.clock.now())
    answer = killer(world).kill(run.run_id)
    assert answer["action"] == "already_terminal"
    assert world.store.read(run.run_id).kill_requested_at is None


def test_a_second_kill_keeps_the_first_request_time(world) -> None:
    run = live_run(world)
    signaller = DyingSignaller(world.prober, fatal=())
    killer(world, signaller, grace=0.1).kill(run.run_id)
    first = world.store.read(run.run_id)
    world.clock.advance(60)
    killer(world, signaller, grace=0.1).kill(run.run_id)
    assert world.store.read(run.run_id).kill_requested_at == first.kill_requested_at


def test_an_end_recorded_under_the_lock_first_wins_over_the_kill(world) -> None:
    run = live_run(world)
    end(world.store, run.run_id, "failed", "failed", "exit_1", now=world.clock.now())
    answer = killer(world, DyingSignaller(world.prober)).kill(run.run_id)
    assert (answer["action"], answer["status"], answer["outcome"]) == ("already_terminal", "failed", "failed")


def test_a_kill_that_cannot_be_recorded_signals_nothing(world) -> None:
    from lionrun.application.ports import StoreBusy

    run = live_run(world)

    class Busy:
        def __getattr__(self, name):
            return getattr(world.store, name)

        def update(self, *args, **kwargs):
            raise StoreBusy("held")

    signaller = DyingSignaller(world.prober)
    refused = Killer(Busy(), world.container.reads.observer(), signaller, world.clock)
    with pytest.raises(ContractError) as error:
        refused.kill(run.run_id)
    assert error.value.kind.value == "unavailable"
    assert signaller.signals == []


@pytest.mark.parametrize("pgid", [0, 1, -7, 4242])
def test_a_recorded_group_other_than_the_leaders_own_is_never_signalled(world, pgid: int) -> None:
    from msgspec.structs import replace

    world.prober.start(4242, create_time=1000.0)  # a bystander that a bad record might name
    run = live_run(world)
    world.store.update(run.run_id, lambda r: r.evolve(incarnation=replace(r.incarnation, pgid=pgid)))
    signaller = DyingSignaller(world.prober)
    answer = killer(world, signaller).kill(run.run_id)
    assert answer["action"] == "no_process"
    assert sent(signaller) == []


# The run is its runner's whole session: kill reaches the work even when the runner is gone.

RUNNER, LEG, SLEEP = 5151, 5160, 5161


def orphaned_work(world):
    """A started run whose runner was SIGKILLed while its leg (own group, same session) still runs."""
    run = live_run(world, RUNNER)
    world.prober.start(LEG, create_time=1000.5, session=RUNNER)
    world.prober.start(SLEEP, create_time=1000.6, session=RUNNER)
    world.prober.kill(RUNNER)
    return run


def test_work_that_outlives_its_runner_is_signalled_member_by_member(world) -> None:
    run = orphaned_work(world)
    signaller = DyingSignaller(world.prober)
    answer = killer(world, signaller).kill(run.run_id)
    assert answer["action"] == "signalled"
    assert sent(signaller) == [(LEG, "terminate"), (SLEEP, "terminate")]
    assert world.store.read(run.run_id).kill_requested_at is not None
    # Nothing of the session lives any more: the first observation reaps it as the cancel it was.
    assert (answer["status"], answer["terminal"], answer["outcome"]) == ("cancelled", True, "cancelled")


def test_members_that_outlive_the_grace_get_sigkill_after_a_rescan(world) -> None:
    run = orphaned_work(world)
    stubborn = DyingSignaller(world.prober, fatal=("kill",))
    killer(world, stubborn, grace=2.0).kill(run.run_id)
    assert sent(stubborn) == [(LEG, "terminate"), (SLEEP, "terminate"),
                              (LEG, "kill"), (SLEEP, "kill")]
    assert sum(world.clock.naps) >= 2.0


class RunnerRecordsItsEnd(RecordingSignaller):
    """The work ignores SIGTERM and dies of SIGKILL; the runner (the leader) ends `after` seconds
    after its SIGTERM, as a lean run's finisher does once it has recorded the end."""

    def __init__(self, world, after: float) -> None:
        super().__init__(world.prober, fatal=("kill",))
        self.world, self.after, self.ends_at = world, after, None

    def signal_session(self, run_id: str, incarnation: Incarnation, stop: Stop,
                       spare_leader: bool = False, own_pids: bool = False,
                       confined: bool = False) -> tuple[int, ...]:
        if stop == "terminate" and self.ends_at is None:
            self.ends_at = self.world.clock.monotonic() + self.after
        return super().signal_session(run_id, incarnation, stop, spare_leader)

    def tick(self) -> None:
        if self.ends_at is not None and self.world.clock.monotonic() >= self.ends_at:
            self.world.prober.kill(RUNNER)


def runner_and_stubborn_work(world, after: float) -> tuple[object, RunnerRecordsItsEnd]:
    run = live_run(world, RUNNER)
    world.prober.start(LEG, create_time=1000.5, session=RUNNER)
    signaller = RunnerRecordsItsEnd(world, after)
    sleep = world.clock.sleep

    def nap(seconds: float) -> None:
        sleep(seconds)
        signaller.tick()

    world.clock.sleep = nap
    return run, signaller


def test_after_the_grace_the_work_is_sigkilled_and_the_runner_spared_while_it_records_the_end(world) -> None:
    run, signaller = runner_and_stubborn_work(world, after=3.5)  # past the 2 s grace, within the runner's time
    killer(world, signaller, grace=2.0).kill(run.run_id)
    assert sent(signaller) == [(RUNNER, "terminate"), (LEG, "terminate"), (LEG, "kill")]
    assert RUNNER not in world.prober.processes


def test_a_runner_that_never_ends_is_sigkilled_after_its_own_time(world) -> None:
    from lionrun.application.kill import RUNNER_END_SECONDS

    run, signaller = runner_and_stubborn_work(world, after=1e9)
    killer(world, signaller, grace=2.0).kill(run.run_id)
    assert sent(signaller) == [(RUNNER, "terminate"), (LEG, "terminate"), (LEG, "kill"),
                               (RUNNER, "kill")]
    assert sum(world.clock.naps) >= 2.0 + RUNNER_END_SECONDS


def test_a_kill_with_nothing_of_the_session_alive_writes_nothing(world) -> None:
    run = orphaned_work(world)
    world.prober.kill(LEG)
    world.prober.kill(SLEEP)
    before = world.store.read(run.run_id)
    signaller = DyingSignaller(world.prober)
    answer = killer(world, signaller).kill(run.run_id)
    assert answer["action"] == "no_process" and signaller.signals == []
    assert (answer["status"], answer["outcome"]) == ("exited", "indeterminate")  # reaped as it was, not cancelled
    after = world.store.read(run.run_id)
    assert after.kill_requested_at is None
    assert after.terminal_evidence["judged_generation"] == before.generation  # the kill wrote nothing first


class Vanishing(RecordingSignaller):
    """The members end just before the signal reaches them (and `then` runs, e.g. the runner's end)."""

    def __init__(self, prober: ScriptedProber, then=None) -> None:
        super().__init__(prober)
        self.then = then

    def signal_session(self, run_id: str, incarnation: Incarnation, stop: Stop,
                       spare_leader: bool = False, own_pids: bool = False,
                       confined: bool = False) -> tuple[int, ...]:
        for pid in list(self.prober.processes):
            self.prober.kill(pid)
        if self.then is not None:
            self.then()
        return super().signal_session(run_id, incarnation, stop, spare_leader)


def test_a_kill_whose_members_end_before_the_signal_withdraws_its_request(world) -> None:
    run = orphaned_work(world)
    answer = killer(world, Vanishing(world.prober)).kill(run.run_id)
    assert answer["action"] == "no_process"
    assert world.store.read(run.run_id).kill_requested_at is None
    assert (answer["status"], answer["outcome"]) == ("exited", "indeterminate")


def test_the_withdrawal_never_touches_an_end_recorded_meanwhile(world) -> None:
    run = live_run(world)
    signaller = Vanishing(world.prober, then=lambda: end(world.store, run.run_id, "cancelled", "cancelled",
                                                           "kill_requested", now=world.clock.now()))
    answer = killer(world, signaller).kill(run.run_id)
    record = world.store.read(run.run_id)
    assert answer["action"] == "no_process" and answer["status"] == "cancelled"
    assert record.kill_requested_at is not None and record.reason_code == "kill_requested"


def test_the_withdrawal_never_removes_a_request_this_kill_did_not_write(world) -> None:
    run = live_run(world)
    world.store.update(run.run_id, lambda r: r.evolve(kill_requested_at="2026-07-25T17:50:00.000000+00:00"))
    killer(world, Vanishing(world.prober)).kill(run.run_id)
    assert world.store.read(run.run_id).kill_requested_at == "2026-07-25T17:50:00.000000+00:00"


def test_a_decoy_session_at_a_recycled_runner_pid_is_never_signalled(world) -> None:
    run = live_run(world, RUNNER)
    world.prober.kill(RUNNER)
    world.prober.start(RUNNER, create_time=4000.0)  # a setsid'd stranger took the freed pid ...
    world.prober.start(LEG, create_time=4000.5, session=RUNNER)  # ... and started a child of its own
    signaller = DyingSignaller(world.prober)
    answer = killer(world, signaller).kill(run.run_id)
    assert answer["action"] == "no_process" and signaller.signals == []
    assert {RUNNER, LEG} <= set(world.prober.processes)
    assert world.store.read(run.run_id).kill_requested_at is None


def test_a_preparing_run_that_started_meanwhile_is_killed_as_a_started_one(world) -> None:
    run = a_run(world.store, world.clock.now(), RunState.PREPARING)
    world.prober.start(RUNNER, create_time=1000.0)

    class Attaching:
        """The submitter attaches the runner just as the kill takes the lock."""

        def __getattr__(self, name):
            return getattr(world.store, name)

        def update(self, run_id, change, *args, **kwargs):
            if world.store.read(run_id).spawn_state == "preparing":
                world.store.update(run_id, lambda r: r.evolve(
                    spawn_state="started", pid=RUNNER, incarnation=scripted_incarnation(world.prober, RUNNER)))
            return world.store.update(run_id, change, *args, **kwargs)

    signaller = DyingSignaller(world.prober)
    answer = Killer(Attaching(), world.container.reads.observer(), signaller, world.clock).kill(run.run_id)
    assert answer["action"] == "signalled" and sent(signaller) == [(RUNNER, "terminate")]
    assert world.store.read(run.run_id).kill_requested_at is not None


class ScopeRecorder(DyingSignaller):
    """Notes the scope each sweep was asked for: (own PID namespace, confined work)."""

    def __init__(self, prober: ScriptedProber) -> None:
        super().__init__(prober, fatal=("kill",))
        self.scopes: list[tuple[Stop, bool, bool]] = []

    def signal_session(self, run_id: str, incarnation: Incarnation, stop: Stop,
                       spare_leader: bool = False, own_pids: bool = False,
                       confined: bool = False) -> tuple[int, ...]:
        self.scopes.append((stop, own_pids, confined))
        return super().signal_session(run_id, incarnation, stop, spare_leader, own_pids, confined)


@pytest.mark.parametrize(("fields", "scope"), [
    ({"confinement": "store_hidden", "processes": "shared"}, (False, True)),
    ({"confinement": "store_hidden", "processes": "pid_namespace"}, (True, True)),
    ({"confinement": "none", "processes": None}, (False, False)),
    ({}, (False, False)),
])
def test_every_sweep_of_a_confined_run_spares_what_its_broker_started(world, fields, scope) -> None:
    """The child runs a confined work submitted through its broker are no processes of
    it; every sweep of the kill (the SIGTERM, and each SIGKILL after it) says so to the signaller."""
    run = live_run(world, **fields)
    signaller = ScopeRecorder(world.prober)
    assert killer(world, signaller, grace=1.0).kill(run.run_id)["action"] == "signalled"
    assert [s[0] for s in signaller.scopes][:2] == ["terminate", "kill"]
    assert {s[1:] for s in signaller.scopes} == {scope}
