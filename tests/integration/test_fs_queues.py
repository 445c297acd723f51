"""Queues on the real filesystem: places in line and slots are kernel locks, so a holder
that dies (its descriptor closed) never keeps one; settings are the store's, private, never half-read."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from datetime import timedelta
from typing import Any

import pytest

from lionrun.adapters import fs_queues
from lionrun.adapters.clocks import FakeClock
from lionrun.adapters.fs_queues import FsQueues
from lionrun.application.ports import Held, QueueBroken
from lionrun.application.queueing import QueueService
from lionrun.domain.queue import set_parallel
from lionrun.domain.run import Run, iso

A, B, C = "20261204T020000-aaaaaa", "20261204T020001-bbbbbb", "20261204T020002-cccccc"


@pytest.fixture
def queues(tmp_path: object) -> FsQueues:
    store = FsQueues(os.path.join(str(tmp_path), "home"))
    store.change("q", lambda s: set_parallel(s, 2))
    return store


def test_tickets_are_given_in_order_and_the_line_is_first_come_first_served(queues: FsQueues) -> None:
    places = [queues.enqueue("q", run_id) for run_id in (A, B, C)]
    assert [p.ticket for p in places] == [0, 1, 2]
    assert [run_id for _, run_id in queues.line("q")] == [A, B, C]
    assert queues.first_in_line("q", A) and not queues.first_in_line("q", B)
    assert queues.waiting("q") == 3


def test_a_later_ticket_is_never_in_line_before_an_earlier_one_being_made(
        queues: FsQueues, monkeypatch: pytest.MonkeyPatch) -> None:
    """A's ticket taken, its entry not yet made (the seam: the entry's file being opened): B's
    enqueue meanwhile must not put B in line ahead of A, or B would take a slot first."""
    made_b = threading.Event()
    threads: list[threading.Thread] = []
    seen: list[tuple[list[tuple[int, str]], bool]] = []  # (the line, B first in it) while A's entry is made
    real_open = fs_queues.open_file

    def open_file(name: str, folder: int, flags: int, *rest: Any) -> int:
        if name == f"{fs_queues.NEW}{A}":
            later = threading.Thread(target=lambda: (queues.enqueue("q", B), made_b.set()))
            threads.append(later)
            later.start()
            made_b.wait(1.0)  # long enough for B's whole enqueue, unless A's lock keeps it out
            line = queues.line("q")
            seen.append((line, any(r == B for _, r in line) and queues.first_in_line("q", B)))
        return real_open(name, folder, flags, *rest)

    monkeypatch.setattr(fs_queues, "open_file", open_file)
    first = queues.enqueue("q", A)
    for thread in threads:
        thread.join(15)
    assert len(seen) == 1 and made_b.is_set()
    line, b_first = seen[0]
    assert line == [], f"B was in line while A's entry, of the earlier ticket, was being made: {line}"
    assert not b_first
    assert first.ticket == 0 and queues.line("q") == [(0, A), (1, B)]


def test_many_concurrent_enqueues_are_in_line_in_ticket_order_with_no_gap(tmp_path: object) -> None:
    """Eight submitters at once, the line looked at all along: whatever it shows is every ticket
    from the first up to its last (a gap would be a later ticket in line before an earlier one)."""
    home = os.path.join(str(tmp_path), "home")
    FsQueues(home).change("q", lambda s: set_parallel(s, 4))
    done = threading.Event()
    gaps: list[list[int]] = []
    places: list[int] = []
    lock = threading.Lock()

    def submitter(index: int) -> None:
        queues = FsQueues(home)
        for n in range(25):
            place = queues.enqueue("q", f"20261204T02{index:02d}{n:02d}-{index:03d}{n:03d}")
            with lock:
                places.append(place.ticket)

    def watcher() -> None:
        queues = FsQueues(home)
        while not done.is_set():
            tickets = [t for t, _ in queues.line("q")]
            if tickets != list(range(len(tickets))):
                gaps.append(sorted(set(range(tickets[-1])) - set(tickets)))  # the tickets missing

    looking = threading.Thread(target=watcher)
    looking.start()
    workers = [threading.Thread(target=submitter, args=(i,)) for i in range(8)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    done.set()
    looking.join()
    assert gaps == [], f"the line showed later tickets than these, missing from it: {gaps[0]}"
    assert sorted(places) == list(range(200)) and [t for t, _ in FsQueues(home).line("q")] == list(range(200))


def test_a_waiter_whose_holder_died_is_passed_over_and_taken_out(queues: FsQueues) -> None:
    first, second = queues.enqueue("q", A), queues.enqueue("q", B)
    assert first.place is not None and second.place is not None
    os.close(first.place)  # what the kernel does when the runner holding it is SIGKILLed
    assert queues.first_in_line("q", B)
    assert [run_id for _, run_id in queues.line("q")] == [B]


def test_a_place_in_line_is_inherited_by_a_child_and_freed_when_it_dies(queues: FsQueues) -> None:
    first = queues.enqueue("q", A)
    queues.enqueue("q", B)
    assert first.place is not None
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], pass_fds=(first.place,))
    os.close(first.place)
    try:
        assert not queues.first_in_line("q", B)  # the child holds A's place
    finally:
        child.kill()
        child.wait()
    assert queues.first_in_line("q", B)


def test_no_more_slots_are_given_than_the_limit_and_a_closed_one_is_free_again(queues: FsQueues) -> None:
    one, two = queues.take_slot("q", 2), queues.take_slot("q", 2)
    assert one is not None and two is not None
    assert queues.take_slot("q", 2) is None and queues.running("q") == 2
    os.close(one)
    assert queues.running("q") == 1
    three = queues.take_slot("q", 2)
    assert three is not None and queues.take_slot("q", 2) is None
    for fd in (two, three):
        os.close(fd)


def test_a_lowered_limit_counts_the_slots_still_held_above_it(queues: FsQueues) -> None:
    held = [queues.take_slot("q", 3) for _ in range(3)]
    assert all(fd is not None for fd in held)
    assert queues.take_slot("q", 2) is None  # three still run; a limit of two gives none
    os.close(held.pop())
    assert queues.take_slot("q", 2) is None
    os.close(held.pop())
    fd = queues.take_slot("q", 2)
    assert fd is not None
    for other in (*held, fd):
        assert other is not None
        os.close(other)


def test_an_unlimited_queue_still_counts_its_running(queues: FsQueues) -> None:
    held = [queues.take_slot("q", None) for _ in range(5)]
    assert all(fd is not None for fd in held) and queues.running("q") == 5
    for fd in held:
        assert fd is not None
        os.close(fd)


def test_the_queue_files_are_private(queues: FsQueues, tmp_path: object) -> None:
    queues.enqueue("q", A)
    folder = os.path.join(str(tmp_path), "home", "queues", "q")
    for name in ("", "line", "slots"):
        assert stat.S_IMODE(os.stat(os.path.join(folder, name)).st_mode) == 0o700
    for name in ("settings.json", "queue.lock", "ticket", f"line/{os.listdir(os.path.join(folder, 'line'))[0]}"):
        assert stat.S_IMODE(os.stat(os.path.join(folder, name)).st_mode) == 0o600


def test_settings_that_cannot_be_used_are_said_so_never_read_as_none(queues: FsQueues, tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "home", "queues", "q", "settings.json")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write('{"name": "q", "parallel": -3}')
    with pytest.raises(QueueBroken):
        queues.settings("q")
    os.unlink(path)
    os.symlink("/etc/passwd", path)
    with pytest.raises(QueueBroken):
        queues.settings("q")


def test_a_waiter_takes_its_slot_only_when_first_and_a_kill_leaves_the_line() -> None:
    clock = FakeClock()
    world = FakeQueues(limit=1)
    service = QueueService(world, clock)
    world.running_now = 1
    world.after_looks = (3, lambda: setattr(world, "running_now", 0))
    turn = service.wait_turn(A, "q", None, lambda: False)
    assert turn.slot == 99 and not turn.stopped and world.left == [A]
    world.left.clear()
    assert service.wait_turn(B, "q", None, lambda: True).stopped and world.left == [B]


def test_a_rate_limited_end_pauses_its_queue_until_the_reset(queues: FsQueues) -> None:
    clock = FakeClock()
    service = QueueService(queues, clock)
    reset = clock.now() + timedelta(minutes=2)
    ended = Run(run_id=A, kind="agent", status="failed", submitted_at=iso(clock.now()), spawn_state="started",
                reason_code="provider_rate_limited", queue="q", retry_at=iso(reset))
    paused = service.after_end(ended)
    assert paused is not None and paused.paused_until == iso(reset)
    row = service.listing()[0]
    assert (row["paused"], row["paused_reason"], row["paused_by"]) == (True, "provider_rate_limited", A)
    clock.advance(121)
    assert service.listing()[0]["paused"] is False
    assert service.after_end(Run(run_id=B, kind="agent", status="failed", submitted_at=iso(clock.now()),
                                 spawn_state="started", reason_code="exit_nonzero", queue="q")) is None


class FakeQueues:
    """A hand-written queue world for the wait loop: one queue, a scripted slot count."""

    def __init__(self, limit: int) -> None:
        from lionrun.domain.queue import QueueSettings

        self.kept = QueueSettings(name="q", parallel=limit)
        self.running_now = 0
        self.left: list[str] = []
        self.looks = 0
        self.after_looks: tuple[int, object] | None = None

    def settings(self, name: str) -> object:
        self.looks += 1
        if self.after_looks is not None and self.looks >= self.after_looks[0]:
            self.after_looks[1]()  # type: ignore[operator]
        return self.kept

    def first_in_line(self, name: str, run_id: str) -> bool:
        return True

    def take_slot(self, name: str, limit: int | None) -> Held | None:
        return Held(99) if limit is None or self.running_now < limit else None

    def leave(self, name: str, run_id: str, waiting: Held | None) -> None:
        self.left.append(run_id)


class FlakyQueues(FakeQueues):
    """The queue world of a shared store on a loaded machine: some looks fail, as scripted."""

    def __init__(self, limit: int, faults: list[Exception]) -> None:
        super().__init__(limit)
        self.faults = faults
        self.slots_taken = 0

    def first_in_line(self, name: str, run_id: str) -> bool:
        if self.faults:
            raise self.faults.pop(0)
        return True

    def take_slot(self, name: str, limit: int | None) -> Held | None:
        self.slots_taken += 1
        return super().take_slot(name, limit)


def test_a_waiter_rides_out_a_store_that_does_not_answer_or_is_busy_and_takes_one_slot() -> None:
    """A statement timed out or a connection dropped while a run waits in its queue (PostgreSQL
    under load) does not end the runner: the look is made again, and one slot is taken."""
    from lionrun.application.outage import Outage
    from lionrun.application.ports import StoreBusy, StoreUnavailable

    clock = FakeClock()
    world = FlakyQueues(1, [StoreUnavailable("statement timeout"), StoreBusy("locked"),
                            StoreUnavailable("server closed the connection")])
    said: list[str] = []
    turn = QueueService(world, clock).wait_turn(A, "q", None, lambda: False, said.append,
                                                outage=Outage(clock, 60.0, said.append))
    assert turn.slot == 99 and not turn.stopped and world.left == [A] and world.slots_taken == 1
    assert "the store is busy" in said and any("unavailable" in line or "outage" in line for line in said), said


def test_a_waiter_gives_up_only_after_the_outage_bound() -> None:
    from lionrun.application.outage import Outage
    from lionrun.application.ports import StoreUnavailable

    clock = FakeClock()
    world = FlakyQueues(1, [StoreUnavailable("down")] * 1000)
    began = clock.monotonic()
    with pytest.raises(StoreUnavailable):
        QueueService(world, clock).wait_turn(A, "q", None, lambda: False, outage=Outage(clock, 30.0))
    assert world.slots_taken == 0 and 30.0 <= clock.monotonic() - began <= 40.0
