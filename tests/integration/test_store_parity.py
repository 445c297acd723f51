"""Both run ports' contract (`RunRecords`, `RunFiles`) against the memory, filesystem and PostgreSQL stores, so they cannot drift."""

from __future__ import annotations

import inspect
import os
from datetime import UTC, datetime
from typing import Any

import pytest

from lionrun.adapters.fs_store import FsRunStore
from lionrun.adapters.memory_store import MemoryRunStore
from lionrun.adapters.pg_store import PgRunStore
from lionrun.application.ports import RunFiles, RunNotFound, RunRecords
from lionrun.domain.run import Run, is_run_id
from tests.pg import pg_store

NOW = datetime(2026, 7, 25, 17, 50, 10, tzinfo=UTC)


class Writer:
    """Puts console text, artifacts and a manifest where each store's runner would put them."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def console(self, run_id: str, text: str) -> None:
        if isinstance(self.store, PgRunStore):  # the runner streams it in as chunks
            self.store.append_console(run_id, text)
            return
        self.store.write_text(run_id, "console.log", text)

    def li_log(self, run_id: str, text: str) -> None:
        """One of li's own lines, as the runner says it: through the li log sink (its stderr)."""
        if isinstance(self.store, MemoryRunStore):
            self.store.append_li_log(run_id, text)
            return
        with self.store.li_log_sink(run_id) as fd, self.store.forward_console(run_id):
            os.write(fd, text.encode())

    def artifact(self, run_id: str, name: str, body: bytes) -> None:
        if isinstance(self.store, MemoryRunStore):
            self.store.put_artifact(run_id, name, body)
            return
        folder = self.store.work_artifacts_dir(run_id)  # where the work writes, as the runner tells it
        with open(os.path.join(folder, name), "wb") as handle:
            handle.write(body)
        self.store.seal_artifacts(run_id)  # the runner does this once the work has ended

    def manifest(self, run_id: str, text: str) -> None:
        self.store.write_text(run_id, "manifest.json", text)


@pytest.fixture(params=["memory", "fs", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    if request.param == "postgresql":
        return pg_store(request.getfixturevalue("pg_dsn"), tmp_path / "li-home" / "spool")
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


def test_the_li_log_is_kept_apart_from_the_console_and_read_the_same(store: Any) -> None:
    """li's own lines never reach the console: `li job output` prints what the work wrote alone."""
    run_id, write = created(store).run_id, Writer(store)
    missing = store.li_log(run_id, 100)
    assert (missing.available, missing.reason_code) == (False, "missing")
    with pytest.raises(OSError):
        store.li_log_bytes(run_id, 0, 100)
    write.console(run_id, "abc")
    write.li_log(run_id, "li runner: ✓ completed\n")
    assert store.console(run_id, 1000).value == "abc"  # exactly the work's bytes
    assert store.console_bytes(run_id, 0, 100) == (b"abc", 3)
    said = "li runner: ✓ completed\n".encode()
    assert store.li_log_bytes(run_id, 0, 100) == (said, len(said))
    assert store.li_log_bytes(run_id, 11, 3) == ("✓".encode(), len(said))
    whole, tail = store.li_log(run_id, 1000), store.li_log(run_id, 10)
    assert (whole.value, whole.truncated) == ("li runner: ✓ completed\n", False)
    assert (tail.value, tail.truncated) == ("completed\n", True)
    store.remove(run_id)
    with pytest.raises(OSError):
        store.li_log_bytes(run_id, 0, 100)  # removed with its run


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
    store.work_artifacts_dir(run_id)  # the runner makes artifacts/ before the work
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


def port_methods(port: type) -> dict[str, list[tuple[str, Any, Any]]]:
    """Each method's parameters (name, kind, default); mypy checks the annotations (`_keeps_both_ports`)."""
    return {name: parameters(member) for name, member in vars(port).items()
            if callable(member) and not name.startswith("_")}


def parameters(method: Any) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(method).parameters.values()]


@pytest.mark.parametrize("port", [RunRecords, RunFiles])
def test_both_stores_keep_every_method_of_both_ports_with_its_signature(store: Any, port: type) -> None:
    for name, expected in port_methods(port).items():
        assert parameters(getattr(type(store), name)) == expected, f"{type(store).__name__}.{name}"


def test_the_ports_split_records_from_files_and_neither_hands_out_a_run_folder() -> None:
    records, files = set(port_methods(RunRecords)), set(port_methods(RunFiles))
    assert records == {"reserve", "discard", "create", "read", "update", "run_ids", "remove", "sweep"}
    assert not records & files
    assert "run_dir" not in records | files


def test_a_discarded_reservation_is_never_listed_nor_read(store: Any) -> None:
    run_id = store.reserve(NOW)
    store.discard(run_id)
    assert run_id not in list(store.run_ids())
    with pytest.raises(RunNotFound):
        store.read(run_id)


def test_a_sweep_leaves_every_run_a_reader_can_see(store: Any) -> None:
    kept = created(store).run_id
    store.sweep()
    assert store.read(kept).run_id == kept and list(store.run_ids()) == [kept]


def test_the_console_is_read_from_an_offset_with_its_size_by_both_stores(store: Any) -> None:
    run_id, write = created(store).run_id, Writer(store)
    with pytest.raises(OSError):
        store.console_bytes(run_id, 0, 100)
    write.console(run_id, "line one\nline two ✓\n")
    size = len("line one\nline two ✓\n".encode())
    assert store.console_bytes(run_id, 0, 0) == (b"", size)
    assert store.console_bytes(run_id, 5, 3) == (b"one", size)
    assert store.console_bytes(run_id, 9, 1000) == ("line two ✓\n".encode(), size)
    assert store.console_bytes(run_id, size, 10) == (b"", size)
    assert store.console_bytes(run_id, size + 7, 10) == (b"", size)  # a console that shrank under a follower


def test_the_console_sink_is_a_writable_descriptor_in_both_stores(store: Any) -> None:
    run_id = created(store).run_id
    with store.console_sink(run_id) as fd:
        assert isinstance(fd, int) and os.write(fd, b"from the child\n") == len(b"from the child\n")


def test_the_console_location_names_the_runs_console_for_a_person(store: Any) -> None:
    run_id = created(store).run_id
    where = store.console_location(run_id)
    assert run_id in where and where.endswith("/console.log")


def test_the_work_artifacts_dir_is_made_empty_and_listed(store: Any) -> None:
    run_id = created(store).run_id
    where = store.work_artifacts_dir(run_id)
    assert run_id in where and where.endswith("/artifacts")
    assert store.work_artifacts_dir(run_id) == where  # made once, the same folder again
    assert store.artifacts(run_id).to_wire() == {"available": True, "value": [], "reason_code": None, "detail": None}


def test_an_artifact_entry_names_a_path_under_the_work_artifacts_dir(store: Any) -> None:
    run_id = created(store).run_id
    where = store.work_artifacts_dir(run_id)
    store.write_text(run_id, "artifacts/response.md", "hello")
    [entry] = store.artifacts(run_id).value
    assert entry["path"] == f"{where}/response.md"


def test_files_of_a_removed_run_are_gone_with_it(store: Any) -> None:
    run_id, write = created(store).run_id, Writer(store)
    write.console(run_id, "x\n")
    write.manifest(run_id, "{}")
    store.write_text(run_id, "instruction.txt", "do it")
    store.remove(run_id)
    assert store.manifest(run_id).reason_code in ("missing", "unreadable")
    assert not store.console(run_id, 10).available
    with pytest.raises(OSError):
        store.console_bytes(run_id, 0, 10)

