"""The wait use case on fakes: what it reads, what it probes, and what it answers."""

from __future__ import annotations

from typing import Any

import pytest
from dependency_injector import providers

from lionrun.adapters.fakes import ScriptedProber
from lionrun.application.wait import StopFlag, WaitResult
from lionrun.domain.evidence import ProcessObservation
from tests.builders import MALFORMED_ID, UNKNOWN_ID, build, with_event_clock
from tests.worlds import World, make_world


class CountingProber(ScriptedProber):
    def __init__(self) -> None:
        super().__init__()
        self.probed: list[int] = []

    def observe(self, pid: int) -> ProcessObservation:
        self.probed.append(pid)
        return super().observe(pid)


class UnreadableStore:
    """A store whose records cannot be opened (permissions): every read raises OSError."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def read(self, run_id: str) -> Any:
        raise PermissionError(13, "Permission denied")


@pytest.fixture
def memory(tmp_path: Any) -> World:
    world: World = with_event_clock(make_world("memory", str(tmp_path)), CountingProber())
    return world


def runs(world: World, *states: str) -> list[str]:
    return [build(world, world.clock, state, 60000 + n) for n, state in enumerate(states)]


def test_a_wait_over_a_thousand_finished_runs_probes_no_process_and_reads_each_record_once(memory: World) -> None:
    ids = runs(memory, *["completed"] * 1000)
    memory.store.reads.clear()
    result = memory.container.waits.waiter().wait(ids, "0", None)
    assert result.partition.all_terminal and len(result.partition.terminal) == 1000
    assert memory.prober.probed == []  # benchmark-critical: terminal runs are never probed
    assert sorted(memory.store.reads) == sorted(ids)


def test_a_terminal_answer_is_not_read_again_on_later_passes(memory: World) -> None:
    done, busy = runs(memory, "completed", "running")
    memory.store.reads.clear()
    result = memory.container.waits.waiter().wait([done, busy], 3, 1)
    assert result.passes == 4 and memory.store.reads.count(done) == 1 and memory.store.reads.count(busy) == 4


def test_a_duplicated_id_is_observed_once_per_pass_and_answered_at_every_position(memory: World) -> None:
    (done,) = runs(memory, "completed")
    memory.store.reads.clear()
    data = memory.container.waits.waiter().wait([done, done, done], 0).to_data()
    assert memory.store.reads == [done]
    assert [e["run_id"] for e in data["runs"]] == [done] * 3 and data["all_terminal"] is True


def test_a_malformed_id_is_never_looked_up(memory: World) -> None:
    memory.store.reads.clear()
    data = memory.container.waits.waiter().wait([MALFORMED_ID, "", "20260725T175010-ABCDEF"], 0).to_data()
    assert memory.store.reads == []
    assert [e["error"]["kind"] for e in data["runs"]] == ["invalid_input"] * 3


def test_a_record_that_cannot_be_opened_is_record_unusable_and_the_rest_is_still_observed(memory: World) -> None:
    (done,) = runs(memory, "completed")
    memory.container.core.store.override(providers.Object(UnreadableStore(memory.store)))
    data = memory.container.waits.waiter().wait([done, UNKNOWN_ID], 0).to_data()
    assert [e["error"]["kind"] for e in data["runs"]] == ["record_unusable", "record_unusable"]
    assert "Permission denied" in data["runs"][0]["error"]["message"]


def test_a_stop_asked_for_during_an_observation_answers_right_after_that_pass(memory: World) -> None:
    (busy,) = runs(memory, "running")
    flag = StopFlag()
    passes: list[WaitResult] = []

    def on_pass(result: WaitResult) -> None:
        passes.append(result)
        flag.request()  # not sleeping: nothing is raised mid-observation, the flag is noted

    result = memory.container.waits.waiter().wait([busy], 60, 1, stop=flag, on_pass=on_pass)
    assert (len(passes), result.interrupted, memory.clock.naps) == (1, True, [])
    assert result.to_data()["pending"] == [busy]


def test_every_pass_is_reported_to_the_caller_for_live_display(memory: World) -> None:
    (busy,) = runs(memory, "running")
    seen: list[int] = []
    memory.container.waits.waiter().wait([busy], 2, 1, on_pass=lambda r: seen.append(r.passes))
    assert seen == [1, 2, 3]


def test_an_empty_request_establishes_nothing(memory: World) -> None:
    data = memory.container.waits.waiter().wait([], 0).to_data()
    assert (data["runs"], data["all_terminal"], data["timed_out"]) == ([], False, False)
