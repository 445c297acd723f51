"""FsRunStore on a real filesystem: atomic fenced writes, a kept lock file, refusals that write nothing."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from filelock import FileLock

from lionrun.adapters.fs_store import FsRunStore
from lionrun.application.ports import RunNotFound, StoreBusy, StoreRefused
from lionrun.domain.run import Run, is_run_id
from tests.support import REPO

NOW = datetime(2026, 7, 25, 17, 50, 10, tzinfo=UTC)


def fresh(tmp_path: Any) -> tuple[FsRunStore, Run]:
    store = FsRunStore(str(tmp_path / "li-home"))
    run_id = store.reserve(NOW)
    return store, store.create(Run(run_id=run_id, kind="agent", status="running", submitted_at=NOW.isoformat(), spawn_state="preparing"))


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

    monkeypatch.setattr("lionrun.adapters.fs_store.os.fsync", full)
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
from lionrun.adapters.fs_store import FsRunStore
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


# --- removal: one rename, no ghost folders ------------------------------------------------------


def test_an_update_that_loses_the_race_to_a_removal_is_not_found_and_leaves_no_ghost_folder(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder is opened before the lock is waited for: one renamed away meanwhile never comes back."""
    import lionrun.adapters.fs_store as fs_store

    store, run = fresh(tmp_path)
    real_acquire = fs_store.flock_within

    def removed_just_before(lock: int, *args: Any) -> None:
        monkeypatch.setattr(fs_store, "flock_within", real_acquire)
        FsRunStore(store.home).remove(run.run_id)  # a prune in another process wins the race
        real_acquire(lock, *args)

    monkeypatch.setattr(fs_store, "flock_within", removed_just_before)
    with pytest.raises(RunNotFound):
        store.update(run.run_id, lambda r: r.evolve(status="completed"))
    assert os.listdir(store.runs) == []


def test_a_writer_waiting_on_the_lock_of_a_run_being_removed_gets_not_found_and_no_ghost(tmp_path: Any) -> None:
    store, run = fresh(tmp_path)
    inside, go_on, outcome = threading.Event(), threading.Event(), []

    def remove_when_told(current: Run) -> None:
        inside.set()
        go_on.wait(10)
        store.remove(run.run_id)

    def write() -> None:
        try:
            FsRunStore(store.home).update(run.run_id, lambda r: r.evolve(status="completed"), lock_timeout=10)
            outcome.append("written")
        except Exception as exc:  # noqa: BLE001 - the test asserts which one
            outcome.append(type(exc).__name__)

    pruner = threading.Thread(target=store.update, args=(run.run_id, remove_when_told))
    pruner.start()
    assert inside.wait(10)
    writer = threading.Thread(target=write)
    writer.start()
    writer.join(0.3)  # the writer is now polling the held lock
    go_on.set()
    pruner.join(10)
    writer.join(10)
    assert outcome == ["RunNotFound"]
    assert os.listdir(store.runs) == []


def test_a_removed_run_leaves_the_store_in_one_rename_and_is_deleted_after_its_lock_is_released(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, run = fresh(tmp_path)
    os.makedirs(os.path.join(store.run_dir(run.run_id), "artifacts", "deep"))
    seen: list[tuple[str, bool, bool]] = []
    real_rmtree = shutil.rmtree

    def deleting(path: str, *args: Any, **kwargs: Any) -> None:  # `path` is relative to runs/ (dir_fd)
        free = FileLock(os.path.join(store.runs, path, "record.lock"), timeout=0)
        free.acquire()  # raises Timeout while the run's lock is still held
        free.release()
        reader = FsRunStore(store.home)
        with pytest.raises(RunNotFound):
            reader.read(run.run_id)
        seen.append((os.path.basename(path), os.path.exists(store.run_dir(run.run_id)),
                     run.run_id in list(reader.run_ids())))
        real_rmtree(path, *args, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", deleting)
    assert store.update(run.run_id, lambda r: store.remove(r.run_id)) is None
    [(trash, run_folder_there, listed)] = seen
    assert trash.startswith(f".trash-{run.run_id}-") and not is_run_id(trash)
    assert (run_folder_there, listed) == (False, False)
    assert os.listdir(store.runs) == []


def test_trash_an_interrupted_removal_left_is_never_listed_and_the_next_removal_sweeps_it(tmp_path: Any) -> None:
    store, run = fresh(tmp_path)
    other = store.create(Run(run_id=store.reserve(NOW), kind="agent", status="failed", submitted_at=NOW.isoformat(), spawn_state="preparing"))
    leftover = os.path.join(store.runs, f".trash-{other.run_id}-0badf00d")
    os.rename(store.run_dir(other.run_id), leftover)  # a prune killed between its rename and its delete
    assert list(store.run_ids()) == [run.run_id]
    store.remove(run.run_id)
    assert os.listdir(store.runs) == []


def test_removing_a_run_that_is_already_gone_is_a_no_op(tmp_path: Any) -> None:
    store, run = fresh(tmp_path)
    store.remove(run.run_id)
    store.remove(run.run_id)
    assert os.listdir(store.runs) == []


# --- the artifacts listing: every entry, links never followed, only regular files read -----------


def artifacts_of(tmp_path: Any) -> tuple[FsRunStore, str, str]:
    store, run = fresh(tmp_path)
    folder = os.path.join(store.run_dir(run.run_id), "artifacts")
    os.makedirs(os.path.join(folder, "sub"))
    with open(os.path.join(folder, "sub", "answer.md"), "wb") as handle:
        handle.write(b"hello")
    return store, run.run_id, folder


def listed(store: FsRunStore, run_id: str) -> dict[str, dict[str, Any]]:
    listing = store.artifacts(run_id)
    assert listing.available, listing
    return {entry["name"]: entry for entry in listing.value}


def test_a_symlink_to_a_directory_is_listed_as_a_link_and_not_walked(tmp_path: Any) -> None:
    store, run_id, folder = artifacts_of(tmp_path)
    os.symlink("/etc", os.path.join(folder, "etc-link"))
    entries = listed(store, run_id)
    assert sorted(entries) == ["etc-link", "sub/answer.md"]
    link = entries["etc-link"]
    assert (link["type"], link["link"], link["sha256"], link["size"]) == ("symlink", "/etc", None, len("/etc"))
    assert entries["sub/answer.md"]["type"] == "file"


def test_a_file_symlink_out_of_the_run_is_never_followed_or_hashed(tmp_path: Any) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_bytes(b"not the run's bytes")
    store, run_id, folder = artifacts_of(tmp_path)
    os.symlink(str(outside), os.path.join(folder, "stolen"))
    stolen = listed(store, run_id)["stolen"]
    assert (stolen["type"], stolen["link"], stolen["sha256"]) == ("symlink", str(outside), None)
    assert stolen["size"] == len(str(outside))


def test_a_dangling_link_is_listed_and_the_rest_of_the_listing_stands(tmp_path: Any) -> None:
    store, run_id, folder = artifacts_of(tmp_path)
    os.symlink("nowhere", os.path.join(folder, "sub", "dangling"))
    entries = listed(store, run_id)
    assert entries["sub/dangling"]["link"] == "nowhere"
    assert entries["sub/answer.md"]["sha256"] == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"


def test_a_fifo_is_listed_by_its_type_and_never_opened(tmp_path: Any) -> None:
    store, run_id, folder = artifacts_of(tmp_path)
    os.mkfifo(os.path.join(folder, "pipe"))
    answers: list[Any] = []
    reader = threading.Thread(target=lambda: answers.append(store.artifacts(run_id)), daemon=True)
    reader.start()
    reader.join(10)
    assert answers, "listing a fifo hung"
    [listing] = answers
    pipe = {entry["name"]: entry for entry in listing.value}["pipe"]
    assert (pipe["type"], pipe["sha256"], pipe["size"], pipe["link"]) == ("fifo", None, 0, None)


def test_an_unreadable_regular_file_still_makes_the_listing_unreadable(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file whose bytes cannot be read has no digest to give: the listing is not established."""
    store, run_id, folder = artifacts_of(tmp_path)
    real_open = os.open

    def refuse(path: Any, *args: Any, **kwargs: Any) -> int:  # opened by name, relative to sub/
        if path == "answer.md":
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    listing = store.artifacts(run_id)
    assert (listing.available, listing.reason_code) == (False, "unreadable")
