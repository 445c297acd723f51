"""The one follow loop (`application.follow`) on the memory store, a scripted prober and a fake clock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from lionrun.adapters.clocks import FakeClock
from lionrun.adapters.fakes import ScriptedProber
from lionrun.adapters.memory_store import MemoryRunStore
from lionrun.application.follow import ConsoleChunk, FollowEnd, Follower
from lionrun.application.observe import Observer
from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.domain.run import Incarnation, Run, iso

PID = 4242


class ScriptedClock(FakeClock):
    """A fake clock whose every sleep first runs the next scripted step (the world moving on)."""

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[Callable[[], None]] = []

    def sleep(self, seconds: float) -> None:
        assert len(self.naps) < 100, "the follow never ended"
        super().sleep(seconds)
        if self.steps:
            self.steps.pop(0)()


class Bench:
    def __init__(self, preparing_threshold: float = 600.0) -> None:
        self.store, self.prober, self.clock = MemoryRunStore(), ScriptedProber(), ScriptedClock()
        observer = Observer(self.store, self.prober, self.clock, preparing_threshold=preparing_threshold)
        self.follower = Follower(self.store, observer, self.clock, poll_seconds=0.5)

    def started(self, console: str | None = None) -> str:
        """A run whose process lives (its identity recorded), with `console` written so far."""
        self.prober.start(PID, create_time=1000.0)
        incarnation = Incarnation("host-a", "boot-1", PID, 1000.0, PID)
        return self._put(console, spawn_state="started", pid=PID, incarnation=incarnation)

    def preparing(self, age: float, console: str | None = None) -> str:
        return self._put(console, spawn_state="preparing", submitted_at=iso(self.clock.now() - timedelta(seconds=age)))

    def _put(self, console: str | None, **fields: Any) -> str:
        run_id = self.store.reserve(self.clock.now())
        values: dict[str, Any] = {"kind": "agent", "status": "running", "submitted_at": iso(self.clock.now())}
        self.store.create(Run(run_id=run_id, **{**values, **fields}))
        if console is not None:
            self.store.append_console(run_id, console)
        return run_id

    def end(self, run_id: str, status: str = "completed", outcome: str = "succeeded") -> None:
        self.store.update(run_id, lambda r: r.evolve(status=status, outcome=outcome, finished_at=iso(self.clock.now())))

    def follow(self, run_id: str, offset: int = 0) -> tuple[bytes, FollowEnd, list[Any]]:
        """(the console's bytes followed, the end, every event: li log chunks among them)."""
        events = list(self.follower.follow(run_id, offset))
        *chunks, last = events
        assert isinstance(last, FollowEnd) and all(isinstance(c, ConsoleChunk) for c in chunks)
        return b"".join(c.data for c in chunks if not c.li), last, events


def said(events: list[Any]) -> bytes:
    """The li log's bytes a follow yielded (apart from the console's)."""
    return b"".join(e.data for e in events if isinstance(e, ConsoleChunk) and e.li)


def test_a_run_that_already_ended_yields_its_whole_console_then_its_end() -> None:
    bench = Bench()
    run_id = bench.started("one\ntwo ✓\n")
    bench.end(run_id, "timed_out", "failed")
    console, end, _ = bench.follow(run_id)
    assert console == "one\ntwo ✓\n".encode()
    assert (end.why, end.exit_code, end.detail, end.observed.derivation.status) == ("ended", 124, None, "timed_out")
    assert bench.clock.naps == []  # nothing to wait for


def test_a_run_that_ends_while_followed_yields_every_byte_written_before_its_end() -> None:
    bench = Bench()
    run_id = bench.started("first ")
    bench.clock.steps = [
        lambda: bench.store.append_console(run_id, "line\nsecond"),
        lambda: None,  # a round with nothing new
        lambda: (bench.store.append_console(run_id, " line\nlast, no newline"), bench.end(run_id)),
    ]
    console, end, events = bench.follow(run_id)
    assert console == b"first line\nsecond line\nlast, no newline"
    assert (end.why, end.exit_code) == ("ended", 0)
    assert bench.clock.naps == [0.5, 0.5, 0.5]  # the poll goes through the clock
    offsets = [e.end for e in events if isinstance(e, ConsoleChunk)]
    assert offsets == [len(b"first "), len(b"first line\nsecond"), len(console)]
    assert said(events) == b""  # no li log yet: nothing of li's is made up


def test_li_lines_are_followed_apart_from_the_console_each_round_after_its_console() -> None:
    bench = Bench()
    run_id = bench.started("work 1\n")
    bench.store.append_li_log(run_id, "li runner: queued in q: 1 ahead\n")
    bench.clock.steps = [
        lambda: bench.store.append_li_log(run_id, "li runner: q gave a slot; the work starts\n"),
        lambda: (bench.store.append_console(run_id, "work 2\n"), bench.end(run_id),
                 bench.store.append_li_log(run_id, "li runner: completed\n")),
    ]
    console, end, events = bench.follow(run_id)
    assert console == b"work 1\nwork 2\n"  # the work's bytes alone
    assert said(events) == (b"li runner: queued in q: 1 ahead\nli runner: q gave a slot; the work starts\n"
                            b"li runner: completed\n")
    shown = [(e.li, e.data) for e in events if isinstance(e, ConsoleChunk)]
    assert shown == [(False, b"work 1\n"), (True, b"li runner: queued in q: 1 ahead\n"),
                     (True, b"li runner: q gave a slot; the work starts\n"),
                     (False, b"work 2\n"), (True, b"li runner: completed\n")]
    li_offsets = [e.end for e in events if isinstance(e, ConsoleChunk) and e.li]
    assert li_offsets[-1] == len(said(events))


def test_a_follow_resumes_the_li_log_from_its_own_offset_and_its_tail_starts_on_a_boundary() -> None:
    bench = Bench()
    run_id = bench.started("work\n")
    bench.store.append_li_log(run_id, "li runner: old\n✓✓ done\n")
    bench.end(run_id)
    start = bench.follower.tail_start(run_id, len("✓ done\n".encode()) + 1, li=True)  # inside the first ✓
    events = list(bench.follower.follow(run_id, 0, start))
    assert said(events) == "✓ done\n".encode()
    assert bench.follower.tail_start(bench.started(), 10, li=True) == 0  # no li log yet


def test_an_aged_preparing_run_ends_the_follow_at_once_instead_of_looping_forever() -> None:
    bench = Bench()
    run_id = bench.preparing(age=3600, console="the work's first line\n")
    bench.store.append_li_log(run_id, "li runner: never got further\n")
    console, end, events = bench.follow(run_id)
    assert console == b"the work's first line\n"
    assert said(events) == b"li runner: never got further\n"
    assert (end.why, end.exit_code) == ("never_started", 1)
    assert end.detail is not None and "start was never recorded" in end.detail
    assert end.observed.derivation.aged_preparing and not end.observed.derivation.terminal


def test_a_preparing_run_that_ages_while_followed_ends_the_follow_by_the_clock() -> None:
    bench = Bench(preparing_threshold=2.0)
    run_id = bench.preparing(age=0)
    console, end, _ = bench.follow(run_id)
    assert (console, end.why) == (b"", "never_started")
    assert bench.clock.naps == [0.5, 0.5, 0.5, 0.5]  # aged at 2.0 s of fake time, not of real time


def test_a_run_whose_process_is_gone_without_an_end_stops_the_follow_with_code_1() -> None:
    bench = Bench()
    run_id = bench._put("partial\n", spawn_state="started", pid=PID)  # gone, and nothing recorded who it was
    console, end, _ = bench.follow(run_id)
    assert (console, end.why, end.exit_code) == (b"partial\n", "stopped", 1)
    assert end.detail is not None and "no end was recorded" in end.detail


def test_a_follow_from_the_tail_starts_on_a_character_boundary() -> None:
    bench = Bench()
    run_id = bench.started("old line\n✓✓ new\n")
    bench.end(run_id)
    tail = len("✓ new\n".encode()) + 1  # starts on the last byte of the first ✓: moved on past it
    console, _, _ = bench.follow(run_id, bench.follower.tail_start(run_id, tail))
    assert console == "✓ new\n".encode()
    assert bench.follower.tail_start(run_id, 10_000) == 0
    assert bench.follower.tail_start(bench.started(), 10) == 0  # no console yet


def test_a_follow_resumes_from_an_offset() -> None:
    bench = Bench()
    run_id = bench.started("seen\nnot yet\n")
    bench.end(run_id)
    console, _, _ = bench.follow(run_id, len(b"seen\n"))
    assert console == b"not yet\n"


def test_a_console_that_shrank_is_read_again_from_its_start() -> None:
    bench = Bench()
    run_id = bench.started("a long first console\n")

    def rewrite() -> None:
        bench.store.write_text(run_id, "console.log", "short\n")
        bench.end(run_id)

    bench.clock.steps = [rewrite]
    console, end, _ = bench.follow(run_id)
    assert console == b"a long first console\nshort\n" and end.why == "ended"


def test_a_missing_console_is_waited_for() -> None:
    bench = Bench()
    run_id = bench.started()
    bench.clock.steps = [lambda: None, lambda: (bench.store.append_console(run_id, "late\n"), bench.end(run_id))]
    console, end, _ = bench.follow(run_id)
    assert (console, end.why) == (b"late\n", "ended")


@pytest.mark.parametrize(("run_id", "kind"), [("20990101T000000-abcdef", ErrorKind.NOT_FOUND),
                                              ("../etc", ErrorKind.INVALID_INPUT)])
def test_a_missing_or_bad_run_is_refused_before_anything_is_yielded(run_id: str, kind: ErrorKind) -> None:
    events = Bench().follower.follow(run_id)
    with pytest.raises(ContractError) as refused:
        next(events)
    assert refused.value.kind == kind


def test_a_renderer_is_fed_every_chunk_and_closed_once_at_the_end() -> None:
    bench = Bench()
    run_id = bench.started("x")
    bench.clock.steps = [lambda: (bench.store.append_console(run_id, "y\n"), bench.end(run_id, "cancelled", "cancelled"),
                                  bench.store.append_li_log(run_id, "li runner: cancelled\n"))]

    class Recording:
        def __init__(self) -> None:
            self.seen: list[Any] = []

        def write(self, chunk: bytes) -> int:
            self.seen.append(chunk)
            return len(chunk)

        def say(self, chunk: bytes) -> int:
            self.seen.append(("said", chunk))
            return len(chunk)

        def flush(self) -> None:
            self.seen.append("flushed")

        def close(self) -> None:
            self.seen.append("closed")

    renderer = Recording()
    end = bench.follower.render(run_id, renderer)
    assert renderer.seen == [b"x", "flushed", b"y\n", "flushed", ("said", b"li runner: cancelled\n"), "flushed",
                             "closed"] and end.exit_code == 143

