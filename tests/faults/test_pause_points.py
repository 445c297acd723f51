"""The fault switch: inert unless asked for, and when asked for it marks and pauses at exactly its phase."""

from __future__ import annotations

import os
import pathlib

import pytest

from lionrun.adapters.faults import PHASES, PausingStore
from lionrun.adapters.memory_store import MemoryRunStore
from lionrun.domain.run import Run


def store_with_run() -> tuple[PausingStore, str]:
    inner = MemoryRunStore()
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    run_id = inner.reserve(now)
    store = PausingStore(inner)
    store.create(Run(run_id=run_id, kind="agent", status="running", submitted_at=now.isoformat(), spawn_state="preparing"))
    return store, run_id


def drive(store: PausingStore, run_id: str) -> None:
    """Every operation a pause point hangs on, in the order a run meets them."""
    store.write_text(run_id, "instruction.txt", "true")
    store.read_text(run_id, "instruction.txt")
    store.write_text(run_id, "manifest.json", "{}")
    store.update(run_id, lambda r: r.evolve(finished_at=r.submitted_at, status="completed",
                                            terminal_source="runner"))


@pytest.mark.parametrize("phase", PHASES)
def test_each_phase_marks_exactly_once_with_this_pid(phase: str, tmp_path: pathlib.Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LI_FAULT_PAUSE", phase)
    monkeypatch.setenv("LI_FAULT_DIR", str(tmp_path))
    monkeypatch.setenv("LI_FAULT_SECONDS", "0")
    store, run_id = store_with_run()
    drive(store, run_id)
    assert sorted(os.listdir(tmp_path)) == [f"{phase}.pid"]
    assert (tmp_path / f"{phase}.pid").read_text() == str(os.getpid())


def test_without_the_switch_nothing_is_marked_and_the_store_behaves_the_same(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LI_FAULT_PAUSE", raising=False)
    monkeypatch.setenv("LI_FAULT_DIR", str(tmp_path))
    store, run_id = store_with_run()
    drive(store, run_id)
    assert os.listdir(tmp_path) == []
    assert store.read(run_id).status == "completed"


def test_the_container_wraps_its_store_only_when_a_phase_is_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    from lionrun.entrypoints.container import get_container, set_container

    monkeypatch.delenv("LI_FAULT_PAUSE", raising=False)
    set_container(None)
    assert not isinstance(get_container().core.store(), PausingStore)
    monkeypatch.setenv("LI_FAULT_PAUSE", "after_end")
    set_container(None)
    assert isinstance(get_container().core.store(), PausingStore)
    set_container(None)
