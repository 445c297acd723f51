"""The same RunStore contract against MemoryRunStore and FsRunStore, so the two cannot drift."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

import pytest

from adapters.fs_store import FsRunStore
from adapters.memory_store import MemoryRunStore
from application.ports import RunNotFound
from domain.run import Run, is_run_id

NOW = datetime(2026, 7, 25, 17, 50, 10, tzinfo=UTC)


class Writer:
    """Puts console text, artifacts and a manifest where each store's runner would put them."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def console(self, run_id: str, text: str) -> None:
        self.store.write_text(run_id, "console.log", text)

    def artifact(self, run_id: str, name: str, body: bytes) -> None:
        if isinstance(self.store, MemoryRunStore):
            self.store.put_artifact(run_id, name, body)
            return
        folder = os.path.join(self.store.run_dir(run_id), "artifacts")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, name), "wb") as handle:
            handle.write(body)

    def manifest(self, run_id: str, text: str) -> None:
        self.store.write_text(run_id, "manifest.json", text)


@pytest.fixture(params=["memory", "fs"])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    return MemoryRunStore() if request.param == "memory" else FsRunStore(str(tmp_path / "li-home"))


def created(store: Any, status: str = "running") -> Run:
    run_id = store.reserve(NOW)
    return store.create(Run(run_id=run_id, kind="agent", status=status, submitted_at=NOW.isoformat(), spawn_state="preparing"))


def test_reserve_hands_out_distinct_valid_ids_for_the_same_instant(store: Any) -> None:
    ids = [store.reserve(NOW) for _ in range(50)]
    assert len(set(ids)) == 50 and all(is_run_id(i) and i.startswith("20260725T175010-") for i in ids)


def test_create_writes_generation_one_and_read_returns_it(store: Any) -> None:
    run = created(store)
    assert run.generation == 1 and store.read(run.run_id) == run


def test_every_update_increments_the_generation_by_one(store: Any) -> None:
    run = created(store)
    for expected in (2, 3, 4):
        updated = store.update(run.run_id, lambda r: r.evolve(status="completed"))
        assert updated is not None and updated.generation == expected == store.read(run.run_id).generation


def test_an_update_whose_change_returns_none_writes_nothing(store: Any) -> None:
    run = created(store)
    assert store.update(run.run_id, lambda r: None) is None
    assert store.read(run.run_id) == run


def test_a_missing_run_is_not_found_for_read_and_update_and_is_not_created(store: Any) -> None:
    missing = "20990101T000000-abcdef"
    with pytest.raises(RunNotFound):
        store.read(missing)
    with pytest.raises(RunNotFound):
        store.update(missing, lambda r: r)
    assert missing not in list(store.run_ids())


def test_run_ids_are_newest_first(store: Any) -> None:
    ids = [created(store).run_id for _ in range(3)]
    later = store.reserve(datetime(2026, 7, 26, tzinfo=UTC))
    store.create(Run(run_id=later, kind="agent", status="running", submitted_at=NOW.isoformat(), spawn_state="preparing"))
    listed = list(store.run_ids())
    assert listed[0] == later and listed == sorted(listed, reverse=True) and set(ids) <= set(listed)


def test_console_missing_empty_and_tail_read_the_same(store: Any) -> None:
    run_id, write = created(store).run_id, Writer(store)
    missing = store.console(run_id, 100)
    assert (missing.available, missing.reason_code, missing.truncated) == (False, "missing", None)
    write.console(run_id, "")
    empty = store.console(run_id, 100)
    assert (empty.available, empty.value, empty.truncated) == (True, "", False)
    write.console(run_id, "line one\nline two ✓\n")
    whole, tail = store.console(run_id, 1000), store.console(run_id, 4)
    assert (whole.value, whole.truncated) == ("line one\nline two ✓\n", False)
    assert (tail.value, tail.truncated) == ("o ✓\n", True)


def test_artifacts_list_name_size_and_digest_alike(store: Any) -> None:
    run_id, write = created(store).run_id, Writer(store)
    write.artifact(run_id, "response.md", b"hello")
    listing = store.artifacts(run_id)
    assert listing.available
    [entry] = listing.value
    assert (entry["name"], entry["size"]) == ("response.md", 5)
    assert entry["sha256"] == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"


def test_manifest_missing_malformed_and_present_read_the_same(store: Any) -> None:
    run_id, write = created(store).run_id, Writer(store)
    assert (store.manifest(run_id).available, store.manifest(run_id).reason_code) == (False, "missing")
    write.manifest(run_id, "{not json")
    assert (store.manifest(run_id).available, store.manifest(run_id).reason_code) == (False, "malformed")
    write.manifest(run_id, "[1, 2]")
    assert store.manifest(run_id).reason_code == "malformed"
    write.manifest(run_id, '{"legs": []}')
    assert store.manifest(run_id).to_wire() == {"available": True, "value": {"legs": []},
                                                "reason_code": None, "detail": None}


def test_text_files_round_trip_and_a_missing_one_is_an_os_error(store: Any) -> None:
    run_id = created(store).run_id
    store.write_text(run_id, "instruction.txt", "do the thing ✓")
    assert store.read_text(run_id, "instruction.txt") == "do the thing ✓"
    with pytest.raises(OSError):
        store.read_text(run_id, "request.json")


def test_a_removed_run_is_gone(store: Any) -> None:
    run_id = created(store).run_id
    store.remove(run_id)
    assert run_id not in list(store.run_ids())
    with pytest.raises(RunNotFound):
        store.read(run_id)


def test_a_text_written_under_artifacts_is_listed_as_an_artifact_by_both_stores(store: Any) -> None:
    run_id = created(store).run_id
    if isinstance(store, FsRunStore):  # on disk the runner makes artifacts/ before the work
        os.makedirs(os.path.join(store.run_dir(run_id), "artifacts"), exist_ok=True)
    store.write_text(run_id, "artifacts/response.md", "hello")
    listing = store.artifacts(run_id)
    assert listing.available
    [entry] = listing.value
    assert (entry["name"], entry["size"]) == ("response.md", 5)
    assert entry["sha256"] == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"


def test_a_removed_run_stays_gone_for_update_and_a_second_removal(store: Any) -> None:
    run_id = created(store).run_id
    store.update(run_id, lambda r: store.remove(r.run_id))  # as prune removes: under the run's lock
    with pytest.raises(RunNotFound):
        store.update(run_id, lambda r: r.evolve(status="completed"))
    store.remove(run_id)
    assert list(store.run_ids()) == []
    with pytest.raises(RunNotFound):
        store.read(run_id)


def test_a_regular_file_is_listed_as_a_file_with_no_link_by_both_stores(store: Any) -> None:
    run_id, write = created(store).run_id, Writer(store)
    write.artifact(run_id, "response.md", b"hello")
    [entry] = store.artifacts(run_id).value
    assert (entry["type"], entry["link"]) == ("file", None)
