"""What a runner does before its work, as use cases over fakes: its kill asking, its queue's slot,
the runs it waits for (--after), its queue after the end."""

from __future__ import annotations

from typing import Any

from lionrun.adapters.clocks import FakeClock
from lionrun.adapters.memory_store import MemoryRunStore
from lionrun.application.dependencies import StartAfter
from lionrun.application.kill_asked import RECORD_LOOK_SECONDS, kill_asker
from lionrun.application.outage import Outage
from lionrun.application.ports import Held, StoreRefused
from lionrun.application.queueing import after_end_in_queue, wait_for_slot
from lionrun.domain.dependencies import DEPENDENCY_FAILED
from lionrun.domain.lifecycle import exit_code_of
from lionrun.domain.queue import QueueSettings
from lionrun.domain.run import Dependency, Run, iso
from tests.builders import RunState, a_run


class Queues:
    """One kept queue `q` with a free slot: records who left the line and what was claimed."""

    def __init__(self, kept: bool = True, claim_refused: bool = False) -> None:
        self.kept = QueueSettings(name="q", parallel=1) if kept else None
        self.left: list[str] = []
        self.claimed: list[str] = []
        self.claim_refused = claim_refused
        self.changed: list[str] = []

    def settings(self, name: str) -> QueueSettings | None:
        return self.kept

    def first_in_line(self, name: str, run_id: str) -> bool:
        return True

    def take_slot(self, name: str, limit: int | None) -> Held | None:
        return Held(99)

    def leave(self, name: str, run_id: str, waiting: Held | None) -> None:
        self.left.append(run_id)

    def claim(self, name: str, run_id: str, priority: int = 0) -> Any:
        if self.claim_refused:
            raise StoreRefused("no room")
        self.claimed.append(run_id)
        return type("Waiting", (), {"place": Held(7)})()

    def change(self, name: str, change: Any) -> QueueSettings:
        self.changed.append(name)
        assert self.kept is not None
        self.kept = change(self.kept)
        return self.kept


def queued(store: MemoryRunStore, clock: FakeClock) -> Run:
    return a_run(store, clock.now(), RunState.QUEUED, queue="q")


def test_a_waiting_runner_is_stopped_by_its_sigterm_or_a_recorded_kill_looked_at_twice_a_second() -> None:
    store, clock, term = MemoryRunStore(), FakeClock(), [False]
    run = a_run(store, clock.now(), RunState.QUEUED)
    clock.advance(1)
    stopped = kill_asker(store, clock, run.run_id, lambda: term[0])
    assert not stopped()
    store.update(run.run_id, lambda r: r.evolve(kill_requested_at=iso(clock.now())))
    assert not stopped()  # the record is not read again yet
    clock.advance(RECORD_LOOK_SECONDS)
    assert stopped()
    term[0] = True
    assert kill_asker(store, clock, "20261205T000000-abcdef", lambda: term[0])()


def test_an_unreadable_record_asks_no_kill() -> None:
    clock = FakeClock()
    clock.advance(1)
    assert not kill_asker(MemoryRunStore(), clock, "20261205T000000-abcdef", lambda: False)()


def test_a_queued_run_takes_its_slot_and_is_recorded_running_before_it_leaves_the_line() -> None:
    store, clock, queues, said = MemoryRunStore(), FakeClock(), Queues(), []
    run = queued(store, clock)
    turn = wait_for_slot(store, queues, clock, run.run_id, Held(5), lambda: False, said.append, Outage(clock))
    assert turn is not None and turn.slot == 99 and not turn.stopped
    assert queues.left == [run.run_id] and queues.claimed == []
    assert store.read(run.run_id).status == "running" and store.read(run.run_id).started_at == iso(clock.now())
    assert said[-1] == "q gave a slot; the work starts"


def test_a_queued_run_without_a_handed_place_claims_one_and_a_refused_claim_starts_the_work() -> None:
    store, clock = MemoryRunStore(), FakeClock()
    run = queued(store, clock)
    queues = Queues()
    assert wait_for_slot(store, queues, clock, run.run_id, None, lambda: False, print, Outage(clock)) is not None
    assert queues.claimed == [run.run_id]
    said: list[str] = []
    refused = wait_for_slot(store, Queues(claim_refused=True), clock, queued(store, clock).run_id, None, lambda: False,
                            said.append, Outage(clock))
    assert refused is not None and refused.slot is None and not refused.stopped
    assert said == ["no place in the queue q: no room; the work starts now"]


def test_a_kill_while_queued_leaves_the_line_without_a_slot_and_the_record_unstarted() -> None:
    store, clock, queues = MemoryRunStore(), FakeClock(), Queues()
    run = queued(store, clock)
    turn = wait_for_slot(store, queues, clock, run.run_id, Held(5), lambda: True, print, Outage(clock))
    assert turn is not None and turn.stopped and turn.slot is None and queues.left == [run.run_id]
    assert store.read(run.run_id).status == "queued"


def test_a_run_not_queued_or_a_store_without_queues_waits_for_nothing() -> None:
    store, clock = MemoryRunStore(), FakeClock()
    running = a_run(store, clock.now(), RunState.RUNNING)
    assert wait_for_slot(store, Queues(), clock, running.run_id, Held(5), lambda: False, print, Outage(clock)) is None
    run = queued(store, clock)
    assert wait_for_slot(store, None, clock, run.run_id, Held(5), lambda: False, print, Outage(clock)) is None
    assert wait_for_slot(store, Queues(), clock, "20261205T000000-abcdef", None, lambda: False, print,
                         Outage(clock)) is None


class Ends:
    """The work's `end_unstarted`, recorded: (reason, noted) of each call; the end as a record."""

    def __init__(self, store: Any, run_id: str) -> None:
        self.store, self.run_id, self.calls = store, run_id, []

    def __call__(self, reason: str, noted: Any) -> Run | None:
        self.calls.append((reason, noted))
        return self.store.update(self.run_id, lambda r: r.evolve(
            status="cancelled", outcome="cancelled", reason_code=reason, finished_at=r.submitted_at,
            exit_code=130, terminal_source="runner"))


def waiting_on(world: Any, dependency: RunState, **fields: Any) -> tuple[Run, Run]:
    after = a_run(world.store, world.clock.now(), dependency, prober=world.prober)
    run = a_run(world.store, world.clock.now(), RunState.WAITING, prober=world.prober,
                after=[Dependency(after.run_id, "ok")], **fields)
    return after, run


def start_after(world: Any, queues: Any = None) -> tuple[StartAfter, list[str]]:
    said: list[str] = []
    return StartAfter(world.store, world.container.reads.observer(), world.clock, queues, said.append), said


def test_a_waiting_run_whose_dependency_succeeded_is_recorded_running_and_its_work_goes_on(world: Any) -> None:
    _, run = waiting_on(world, RunState.COMPLETED)
    use_case, said = start_after(world)
    ends = Ends(world.store, run.run_id)
    assert use_case.wait(run.run_id, lambda: False, ends) is None
    assert ends.calls == [] and world.store.read(run.run_id).status == "running"
    assert said[-1] == "the runs it waited for ended as asked; the work starts"


def test_a_waiting_run_of_a_kept_queue_enters_its_line_once_its_dependency_succeeded(world: Any) -> None:
    _, run = waiting_on(world, RunState.COMPLETED, queue="q")
    use_case, said = start_after(world, Queues())
    assert use_case.wait(run.run_id, lambda: False, Ends(world.store, run.run_id)) is None
    assert world.store.read(run.run_id).status == "queued" and world.store.read(run.run_id).started_at is None
    assert said[-1] == "the runs it waited for ended as asked; it enters the queue q"


def test_a_waiting_run_whose_dependency_failed_ends_unstarted_naming_it(world: Any) -> None:
    failed, run = waiting_on(world, RunState.FAILED)
    use_case, said = start_after(world)
    ends = Ends(world.store, run.run_id)
    assert use_case.wait(run.run_id, lambda: False, ends) == exit_code_of("cancelled")
    [(reason, noted)] = ends.calls
    assert reason == DEPENDENCY_FAILED and noted["failed_dependency"]["run_id"] == failed.run_id
    assert said[-1].startswith("not starting the work: ")


def test_a_kill_while_waiting_ends_the_run_cancelled_without_its_work(world: Any) -> None:
    _, run = waiting_on(world, RunState.RUNNING)
    use_case, said = start_after(world)
    ends = Ends(world.store, run.run_id)
    assert use_case.wait(run.run_id, lambda: True, ends) == exit_code_of("cancelled")
    assert ends.calls == [("cancelled", None)]
    assert said == ["killed while it waited for other runs; the work never started"]


def test_a_run_that_is_not_waiting_goes_on_at_once(world: Any) -> None:
    run = a_run(world.store, world.clock.now(), RunState.RUNNING, prober=world.prober)
    use_case, said = start_after(world)
    assert use_case.wait(run.run_id, lambda: True, Ends(world.store, run.run_id)) is None and said == []


def test_a_rate_limited_end_pauses_its_queue_and_says_until_when() -> None:
    clock, queues, said = FakeClock(), Queues(), []
    reset = iso(clock.now().replace(year=clock.now().year + 1))
    ended = Run(run_id="20261205T000000-abcdef", kind="agent", status="failed", submitted_at=iso(clock.now()),
                spawn_state="started", reason_code="provider_rate_limited", queue="q", retry_at=reset)
    after_end_in_queue(queues, clock, ended, said.append)
    assert queues.changed == ["q"] and said[-1].endswith("(rate limited)") and "queue q paused until" in said[-1]


def test_an_end_that_neither_was_rate_limited_nor_spent_tokens_leaves_its_queue_alone() -> None:
    clock, queues, said = FakeClock(), Queues(), []
    ended = Run(run_id="20261205T000000-abcdef", kind="agent", status="failed", submitted_at=iso(clock.now()),
                spawn_state="started", reason_code="exit_nonzero", queue="q")
    after_end_in_queue(queues, clock, ended, said.append)
    after_end_in_queue(queues, clock, None, said.append)
    assert queues.changed == [] and said == []
