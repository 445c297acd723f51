"""FsRunStore on a real filesystem: atomic fenced writes, a kept lock file, refusals that write nothing."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from datetime import UTC, datetime
from typing import Any

import pytest
from filelock import FileLock

from adapters.fs_store import FsRunStore
from application.ports import StoreBusy, StoreRefused
from domain.run import Run
from tests.support import REPO

NOW = datetime(2026, 7, 25, 17, 50, 10, tzinfo=UTC)


def fresh(tmp_path: Any) -> tuple[FsRunStore, Run]:
    store = FsRunStore(str(tmp_path / "li-home"))
    run_id = store.reserve(NOW)
    return store, store.create(Run(run_id=run_id, kind="agent", status="running", submitted_at=NOW.isoformat()))


def test_a_record_is_written_whole_with_no_temp_file_left_and_the_lock_kept(tmp_path: Any) -> None:
    store, run = fresh(tmp_path)
    store.update(run.run_id, lambda r: r.evolve(status="completed"))
    assert sorted(os.listdir(store.run_dir(run.run_id))) == ["record.json", "record.lock"]


def test_a_held_lock_makes_an_update_busy_and_writes_nothing(tmp_path: Any) -> None:
    store, run = fresh(tmp_path)
    with FileLock(os.path.join(store.run_dir(run.run_id), "record.lock")), pytest.raises(StoreBusy):
        store.update(run.run_id, lambda r: r.evolve(status="completed"), lock_timeout=0.05)
    assert store.read(run.run_id) == run


def test_a_write_the_disk_refuses_is_store_refused_and_leaves_the_record(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, run = fresh(tmp_path)

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("adapters.fs_store.os.fsync", full)
    with pytest.raises(StoreRefused):
        store.update(run.run_id, lambda r: r.evolve(status="completed"))
    monkeypatch.undo()
    assert store.read(run.run_id) == run
    assert sorted(os.listdir(store.run_dir(run.run_id))) == ["record.json", "record.lock"]


def test_a_home_that_cannot_hold_runs_refuses_to_reserve(tmp_path: Any) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("x")
    with pytest.raises(StoreRefused):
        FsRunStore(str(blocker)).reserve(NOW)


@pytest.mark.parametrize("bad", ["../../etc/passwd", "/etc", "..", "", "20260725T175010-97f334/../x"])
def test_no_name_but_a_run_id_can_become_a_path(tmp_path: Any, bad: str) -> None:
    with pytest.raises(ValueError):
        FsRunStore(str(tmp_path)).run_dir(bad)


def test_a_reserved_folder_without_a_record_is_listed_but_not_readable_as_a_run(tmp_path: Any) -> None:
    store = FsRunStore(str(tmp_path / "li-home"))
    run_id = store.reserve(NOW)
    assert list(store.run_ids()) == [run_id]
    store.discard(run_id)
    assert list(store.run_ids()) == []


CONCURRENT = """
import sys
from adapters.fs_store import FsRunStore
store = FsRunStore(sys.argv[1])
for _ in range(int(sys.argv[3])):
    store.update(sys.argv[2], lambda r: r.evolve(extra={"count": r.extra.get("count", 0) + 1}))
"""


def test_concurrent_writers_in_separate_processes_never_lose_an_update(tmp_path: Any) -> None:
    store, run = fresh(tmp_path)
    writers = [subprocess.Popen([sys.executable, "-c", CONCURRENT, store.home, run.run_id, "15"], cwd=REPO)
               for _ in range(4)]
    assert [w.wait(timeout=120) for w in writers] == [0, 0, 0, 0]
    final = store.read(run.run_id)
    assert final.extra["count"] == 60 and final.generation == 61
