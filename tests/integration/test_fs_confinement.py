"""The filesystem store under a hostile run folder: nothing outside the store is read, written or followed."""

from __future__ import annotations

import json
import os
import stat
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from lionrun.adapters.fs_store import FsRunStore
from lionrun.application.ports import RunNotFound, StoreRefused
from lionrun.domain.run import RecordUnusable, Run

NOW = datetime(2026, 7, 25, 17, 50, 10, tzinfo=UTC)
CANARY = "CANARY-outside-the-store"


@pytest.fixture
def outside(tmp_path: Any) -> dict[str, str]:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text(CANARY)
    other = Run("20260725T175010-000000", "agent", "running", NOW.isoformat(), spawn_state="started", pid=1)
    (folder / "record.json").write_text(json.dumps(other.to_dict()))
    return {"folder": str(folder), "secret": str(folder / "secret.txt")}


def snapshot(folder: str) -> dict[str, tuple[bytes, int, int]]:
    out = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        info = os.lstat(path)
        with open(path, "rb") if stat.S_ISREG(info.st_mode) else open(os.devnull, "rb") as handle:
            body = handle.read()
        out[name] = (body, info.st_mtime_ns, stat.S_IMODE(info.st_mode))
    return out


def fresh(tmp_path: Any) -> tuple[FsRunStore, str, str]:
    store = FsRunStore(str(tmp_path / "home"))
    run_id = store.reserve(NOW)
    store.create(Run(run_id, "agent", "running", NOW.isoformat(), spawn_state="started"))
    return store, run_id, store.run_dir(run_id)


def replace_with_link(path: str, target: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        import shutil

        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)
    os.symlink(target, path)


def test_a_run_folder_replaced_by_a_link_is_unusable_and_nothing_is_written_through_it(
    tmp_path: Any, outside: dict[str, str]
) -> None:
    store, run_id, folder = fresh(tmp_path)
    before = snapshot(outside["folder"])
    replace_with_link(folder, outside["folder"])
    with pytest.raises(RecordUnusable) as refused:
        store.read(run_id)
    assert refused.value.reason_code == "not_a_directory"
    with pytest.raises(RecordUnusable):
        store.update(run_id, lambda r: r.evolve(status="completed"))
    with pytest.raises(StoreRefused):
        store.write_text(run_id, "manifest.json", "{}")
    assert store.console(run_id, 100).reason_code == "not_a_directory"
    assert snapshot(outside["folder"]) == before
    store.remove(run_id)  # the link goes; its target stays whole
    assert not os.path.lexists(folder) and snapshot(outside["folder"]) == before


def test_a_record_that_is_a_link_is_unusable_and_never_replaced(tmp_path: Any, outside: dict[str, str]) -> None:
    store, run_id, folder = fresh(tmp_path)
    replace_with_link(os.path.join(folder, "record.json"), os.path.join(outside["folder"], "record.json"))
    before = snapshot(outside["folder"])
    with pytest.raises(RecordUnusable) as refused:
        store.read(run_id)
    assert refused.value.reason_code == "not_regular_file"
    with pytest.raises(RecordUnusable):
        store.update(run_id, lambda r: r.evolve(status="completed"))
    assert os.path.islink(os.path.join(folder, "record.json")) and snapshot(outside["folder"]) == before


@pytest.mark.parametrize("planted", ["link", "fifo", "folder"])
def test_a_lock_planted_as_a_link_fifo_or_folder_is_replaced_and_its_target_never_touched(
    tmp_path: Any, outside: dict[str, str], planted: str
) -> None:
    store, run_id, folder = fresh(tmp_path)
    lock = os.path.join(folder, "record.lock")
    os.unlink(lock)
    {"link": lambda: os.symlink(outside["secret"], lock), "fifo": lambda: os.mkfifo(lock),
     "folder": lambda: os.mkdir(lock)}[planted]()
    before = snapshot(outside["folder"])
    assert store.update(run_id, lambda r: r.evolve(status="completed")) is not None
    assert snapshot(outside["folder"]) == before and store.read(run_id).status == "completed"
    assert stat.S_ISREG(os.lstat(lock).st_mode)


def test_a_lock_folder_with_content_refuses_the_write(tmp_path: Any) -> None:
    store, run_id, folder = fresh(tmp_path)
    lock = os.path.join(folder, "record.lock")
    os.unlink(lock)
    os.makedirs(os.path.join(lock, "inside"))
    with pytest.raises(StoreRefused):
        store.update(run_id, lambda r: r.evolve(status="completed"))
    assert store.read(run_id).status == "running"


def test_fifos_where_files_belong_never_block_a_read(tmp_path: Any) -> None:
    store, run_id, folder = fresh(tmp_path)
    for name in ("console.log", "manifest.json"):
        os.mkfifo(os.path.join(folder, name))
    began = time.monotonic()
    assert store.console(run_id, 100).reason_code == "not_regular_file"
    assert store.manifest(run_id).reason_code == "not_regular_file"
    with pytest.raises(OSError):
        store.console_bytes(run_id, 0, 100)
    os.unlink(os.path.join(folder, "record.json"))
    os.mkfifo(os.path.join(folder, "record.json"))
    with pytest.raises(RecordUnusable) as refused:
        store.read(run_id)
    assert refused.value.reason_code == "not_regular_file" and time.monotonic() - began < 5


def test_a_console_link_or_hard_link_to_an_outside_file_is_not_served(tmp_path: Any, outside: dict[str, str]) -> None:
    store, run_id, folder = fresh(tmp_path)
    console = os.path.join(folder, "console.log")
    os.symlink(outside["secret"], console)
    linked = store.console(run_id, 1000)
    os.unlink(console)
    os.link(outside["secret"], console)
    hard = store.console(run_id, 1000)
    for answer in (linked, hard):
        assert (answer.available, answer.reason_code) == (False, "not_regular_file")
        assert CANARY not in str(answer.to_wire())


def test_artifacts_replaced_by_a_link_are_not_listed_and_not_written_through(
    tmp_path: Any, outside: dict[str, str]
) -> None:
    store, run_id, folder = fresh(tmp_path)
    before = snapshot(outside["folder"])
    replace_with_link(os.path.join(folder, "artifacts"), outside["folder"])
    listing = store.artifacts(run_id)
    assert (listing.available, listing.reason_code) == (False, "not_a_directory")
    with pytest.raises(StoreRefused):
        store.write_text(run_id, "artifacts/response.md", "the answer")
    with pytest.raises(StoreRefused):
        store.work_artifacts_dir(run_id)
    assert snapshot(outside["folder"]) == before


def test_links_inside_artifacts_are_listed_never_entered_or_digested(tmp_path: Any, outside: dict[str, str]) -> None:
    import hashlib

    store, run_id, folder = fresh(tmp_path)
    artifacts = os.path.join(folder, "artifacts")
    os.makedirs(os.path.join(artifacts, "sub"))
    os.symlink(outside["folder"], os.path.join(artifacts, "sub", "outside"))
    os.symlink("/proc", os.path.join(artifacts, "proc"))
    os.link(outside["secret"], os.path.join(artifacts, "hard.txt"))
    with open(os.path.join(artifacts, "answer.md"), "w") as handle:
        handle.write("mine")
    listing = store.artifacts(run_id)
    assert listing.available
    by_name = {e["name"]: e for e in listing.value or []}
    assert set(by_name) == {"answer.md", "hard.txt", "proc", "sub/outside"}
    assert by_name["hard.txt"]["type"] == "hardlink" and by_name["hard.txt"]["sha256"] is None
    assert by_name["proc"]["type"] == by_name["sub/outside"]["type"] == "symlink"
    assert by_name["answer.md"]["sha256"] == hashlib.sha256(b"mine").hexdigest()
    assert hashlib.sha256(CANARY.encode()).hexdigest() not in str(listing.value)


def test_oversized_and_deep_files_are_refused_with_their_reason(tmp_path: Any) -> None:
    store, run_id, folder = fresh(tmp_path)
    with open(os.path.join(folder, "manifest.json"), "wb") as handle:
        handle.write(b"[" * 5000 + b"]" * 5000)
    assert store.manifest(run_id).reason_code == "too_deep"
    with open(os.path.join(folder, "manifest.json"), "wb") as handle:
        handle.truncate(9 << 20)
    assert store.manifest(run_id).reason_code == "too_large"
    with open(os.path.join(folder, "record.json"), "wb") as handle:
        handle.truncate((1 << 20) + 1)
    with pytest.raises(RecordUnusable) as refused:
        store.read(run_id)
    assert refused.value.reason_code == "too_large"


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o000])
def test_the_store_is_private_whatever_the_umask(tmp_path: Any, umask: int) -> None:
    old = os.umask(umask)
    try:
        store, run_id, folder = fresh(tmp_path)
        store.write_text(run_id, "instruction.txt", "a secret prompt")
        store.write_text(run_id, "artifacts/response.md", "a secret answer")
        with store.console_sink(run_id) as fd:
            os.write(fd, b"secret output\n")
    finally:
        os.umask(old)
    modes = {path: stat.S_IMODE(os.lstat(path).st_mode) for path in (
        store.home, store.runs, folder, os.path.join(folder, "artifacts"))}
    assert set(modes.values()) == {0o700}, modes
    files = {name: stat.S_IMODE(os.lstat(os.path.join(folder, name)).st_mode) for name in (
        "record.json", "record.lock", "instruction.txt", "console.log", "artifacts/response.md")}
    assert set(files.values()) == {0o600}, files


def test_a_home_that_is_a_file_is_an_environment_fault_not_a_missing_run(tmp_path: Any) -> None:
    home = tmp_path / "home"
    home.write_text("not a folder")
    store = FsRunStore(str(home))
    with pytest.raises(StoreRefused):
        store.read("20260725T175010-abcdef")
    with pytest.raises(StoreRefused):
        list(store.run_ids())
    with pytest.raises(StoreRefused):
        store.reserve(NOW)


def test_runs_replaced_by_a_link_is_refused_and_a_missing_home_is_simply_empty(
    tmp_path: Any, outside: dict[str, str]
) -> None:
    assert list(FsRunStore(str(tmp_path / "nothing-yet")).run_ids()) == []
    with pytest.raises(RunNotFound):
        FsRunStore(str(tmp_path / "nothing-yet")).read("20260725T175010-abcdef")
    store, run_id, _ = fresh(tmp_path)
    replace_with_link(store.runs, outside["folder"])
    with pytest.raises(StoreRefused):
        store.read(run_id)
    with pytest.raises(StoreRefused):
        store.reserve(NOW)


def test_write_text_refuses_names_that_climb_out(tmp_path: Any) -> None:
    store, run_id, _ = fresh(tmp_path)
    for name in ("../x", "a/../../x", "/etc/passwd", "", "artifacts/", "a/b/c"):
        with pytest.raises(ValueError):
            store.write_text(run_id, name, "x")
