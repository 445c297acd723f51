"""The PostgreSQL store on a real server: fenced writes, console chunks, artifacts, faults."""

from __future__ import annotations

import multiprocessing
from datetime import UTC, datetime
from typing import Any

import pytest

from lionrun.adapters.pg_store import CONSOLE_STREAM
from lionrun.application.ports import RunNotFound, StoreBusy, StoreRefused
from lionrun.domain.run import Run
from tests.pg import pg_store

NOW = datetime(2026, 12, 3, 8, 0, 0, tzinfo=UTC)


def created(store: Any) -> Run:
    run_id = store.reserve(NOW)
    return store.create(Run(run_id=run_id, kind="agent", status="running", submitted_at=NOW.isoformat(),
                            spawn_state="started"))


def test_a_record_round_trips_with_its_generation(pg_dsn: str, tmp_path: Any) -> None:
    store = pg_store(pg_dsn, tmp_path)
    run = created(store)
    assert store.read(run.run_id) == run and run.generation == 1
    assert list(store.run_ids()) == [run.run_id]
    assert store.host_of(run.run_id) == "host-a"


def test_a_reserved_run_without_a_record_is_not_found_and_not_listed(pg_dsn: str, tmp_path: Any) -> None:
    store = pg_store(pg_dsn, tmp_path)
    run_id = store.reserve(NOW)
    with pytest.raises(RunNotFound):
        store.read(run_id)
    assert list(store.run_ids()) == []
    store.discard(run_id)
    assert store.host_of(run_id) is None


def _bump(dsn: str, spool: str, run_id: str, times: int) -> None:
    from lionrun.adapters.pg_store import PgRunStore

    store = PgRunStore(dsn, spool, host_id="host-a")
    for _ in range(times):
        store.update(run_id, lambda r: r.evolve(extra={**r.extra, "n": r.extra.get("n", 0) + 1}), lock_timeout=30)


def test_eight_processes_racing_lose_no_update(pg_dsn: str, tmp_path: Any) -> None:
    store = pg_store(pg_dsn, tmp_path)
    run = created(store)
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_bump, args=(pg_dsn, str(tmp_path), run.run_id, 25)) for _ in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
        assert w.exitcode == 0
    final = store.read(run.run_id)
    assert final.extra["n"] == 200 and final.generation == 201


def test_a_held_row_lock_is_store_busy_within_the_timeout(pg_dsn: str, tmp_path: Any) -> None:
    import psycopg

    store = pg_store(pg_dsn, tmp_path)
    run = created(store)
    with psycopg.connect(pg_dsn) as holder:
        holder.execute("SELECT 1 FROM runs WHERE run_id = %s FOR UPDATE", (run.run_id,))
        with pytest.raises(StoreBusy):
            store.update(run.run_id, lambda r: r.evolve(status="x"), lock_timeout=0.2)
    assert store.read(run.run_id) == run


def test_change_returning_none_writes_nothing(pg_dsn: str, tmp_path: Any) -> None:
    store = pg_store(pg_dsn, tmp_path)
    run = created(store)
    assert store.update(run.run_id, lambda r: None) is None
    assert store.read(run.run_id).generation == 1


def test_a_corrupt_record_row_is_record_unusable_not_a_crash(pg_dsn: str, tmp_path: Any) -> None:
    import psycopg

    from lionrun.domain.run import RecordUnusable

    store = pg_store(pg_dsn, tmp_path)
    run = created(store)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("UPDATE runs SET record = %s WHERE run_id = %s", ('{"run_id": "x"' , run.run_id))
    with pytest.raises(RecordUnusable):
        store.read(run.run_id)


def test_console_chunks_are_read_from_any_offset_and_tailed(pg_dsn: str, tmp_path: Any) -> None:
    import os
    import time

    store = pg_store(pg_dsn, tmp_path)
    run = created(store)
    with store.console_sink(run.run_id) as fd, store.forward_console(run.run_id):
        os.write(fd, b"hello ")
        deadline = time.monotonic() + 10  # forwarded while the work runs, not only at its end
        while store.console_bytes(run.run_id, 0, 100)[0] != b"hello " and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store.console_bytes(run.run_id, 0, 100) == (b"hello ", 6)
        for part in (b"wide ", "w\u00f6rld\n".encode()):
            os.write(fd, part)
    assert not os.path.exists(tmp_path / run.run_id)  # nothing of the run is left on this host
    data, size = store.console_bytes(run.run_id, 0, 1 << 20)
    assert data == "hello wide w\u00f6rld\n".encode() and size == len(data)
    assert store.console_bytes(run.run_id, 6, 4) == (b"wide", size)
    tail = store.console(run.run_id, 6)
    assert tail.value == "w\u00f6rld\n"[-6:] and tail.truncated is True


def test_a_missing_console_is_unavailable_missing(pg_dsn: str, tmp_path: Any) -> None:
    store = pg_store(pg_dsn, tmp_path)
    run = created(store)
    console = store.console(run.run_id, 100)
    assert console.available is False and console.reason_code == "missing"


def test_a_server_that_is_not_there_is_store_refused_not_a_hang(tmp_path: Any) -> None:
    from lionrun.adapters.pg_store import PgRunStore

    store = PgRunStore("postgresql://postgres@127.0.0.1:1/lionrun", str(tmp_path), host_id="h")
    with pytest.raises(StoreRefused):
        store.read("20261203T080000-abcdef")
    with pytest.raises(StoreRefused):
        store.reserve(NOW)


def test_a_manifest_between_the_text_and_manifest_bounds_is_read_and_a_larger_one_is_too_large(
        pg_dsn: str, tmp_path: Any) -> None:
    import json

    store = pg_store(pg_dsn, tmp_path)
    run = created(store)
    big = json.dumps({"pad": "x" * (5 * 1024 * 1024)})  # over the 4 MiB text bound, under the 8 MiB manifest one
    store.write_text(run.run_id, "manifest.json", big)
    assert store.manifest(run.run_id).available
    store.write_text(run.run_id, "manifest.json", json.dumps({"pad": "x" * (9 * 1024 * 1024)}))
    too_big = store.manifest(run.run_id)
    assert (too_big.available, too_big.reason_code) == (False, "too_large")
    with pytest.raises(OSError):
        store.read_text(run.run_id, "manifest.json")


def test_a_server_that_does_not_answer_is_unavailable_and_one_that_refuses_is_not(
        pg_dsn: str, tmp_path: Any) -> None:
    """The runner retries only StoreUnavailable: a refusal (no such database, no privilege) must not be one."""
    import psycopg

    from lionrun.adapters.pg_store import PgRunStore
    from lionrun.application.ports import StoreUnavailable

    with pytest.raises(StoreUnavailable, match="cannot be reached"):
        PgRunStore("postgresql://postgres@127.0.0.1:1/lionrun", str(tmp_path), host_id="h").read(
            "20261203T080000-abcdef")
    with pytest.raises(StoreRefused, match="does not exist") as no_database:
        PgRunStore(pg_dsn + "_nothing_here", str(tmp_path), host_id="h").read("20261203T080000-abcdef")
    assert not isinstance(no_database.value, StoreUnavailable)
    store = pg_store(pg_dsn, tmp_path)
    run = created(store)
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        role = "li_reader_" + admin.info.dbname  # roles are the server's: one per worker's database
        admin.execute(f"DROP ROLE IF EXISTS {role}")
        admin.execute(f"CREATE ROLE {role} LOGIN")
        try:
            admin.execute(f"GRANT SELECT ON runs, run_files, console_chunks, artifacts, lionrun_schema TO {role}")
            reader = PgRunStore(pg_dsn.replace("postgres@", f"{role}@"), str(tmp_path), host_id="h")
            assert reader.read(run.run_id).run_id == run.run_id
            with pytest.raises(StoreRefused, match="permission denied") as denied:
                reader.update(run.run_id, lambda r: r.evolve(status="completed"))
            assert not isinstance(denied.value, StoreUnavailable)
            reader.close()
        finally:
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")


def test_a_statement_timeout_is_unavailable_in_a_read_and_in_the_fenced_write(pg_dsn: str, tmp_path: Any) -> None:
    import psycopg

    from lionrun.adapters.pg_store import PgRunStore
    from lionrun.application.ports import StoreUnavailable

    run = created(pg_store(pg_dsn, tmp_path))
    store = PgRunStore(pg_dsn, str(tmp_path), host_id="host-a", statement_timeout=0.3)
    with psycopg.connect(pg_dsn) as blocker:
        blocker.execute("LOCK TABLE runs IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(StoreUnavailable, match="timeout"):
            store.read(run.run_id)
        with pytest.raises(StoreUnavailable, match="timeout"):
            store.update(run.run_id, lambda r: r.evolve(status="completed"), lock_timeout=5.0)
        blocker.rollback()
    assert store.update(run.run_id, lambda r: r.evolve(status="completed")).status == "completed"


def test_a_terminated_connection_fails_one_call_as_unavailable_and_the_next_call_reconnects(
        pg_dsn: str, tmp_path: Any) -> None:
    import psycopg

    from lionrun.application.ports import StoreUnavailable

    store = pg_store(pg_dsn, tmp_path)
    run = created(store)
    store.read(run.run_id)
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        (done,) = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = "
                                "current_database() AND pid <> pg_backend_pid()").fetchone()
        assert done
    with pytest.raises(StoreUnavailable):
        store.update(run.run_id, lambda r: r.evolve(status="completed"))
    assert store.update(run.run_id, lambda r: r.evolve(status="completed")).generation == 2
    assert store.read(run.run_id).status == "completed"


def test_the_console_mover_goes_on_from_what_the_store_holds_and_never_stores_a_chunk_twice(
        pg_dsn: str, tmp_path: Any) -> None:
    import os

    import psycopg

    store = pg_store(pg_dsn, tmp_path)
    run = created(store)
    with store.console_sink(run.run_id) as fd:
        os.write(fd, b"first\n")
        store._move_spooled(run.run_id)
        store._move_spooled(run.run_id)  # nothing new: nothing stored
        os.write(fd, b"second\n")
        store._append(run.run_id, CONSOLE_STREAM, 0, b"first\n")  # a retried chunk (its answer was lost)
        store._move_spooled(run.run_id)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT start_offset, body FROM console_chunks WHERE run_id = %s ORDER BY start_offset",
                            (run.run_id,)).fetchall()
    assert [(int(o), bytes(b)) for o, b in rows] == [(0, b"first\n"), (6, b"second\n")]
    assert store.console_bytes(run.run_id, 0, 100) == (b"first\nsecond\n", 13)


def test_the_li_log_is_moved_in_beside_the_console_and_made_in_a_database_that_lacked_it(
        pg_dsn: str, tmp_path: Any) -> None:
    """A database initialised before the li log existed gets its table from the first runner."""
    import os

    import psycopg

    store = pg_store(pg_dsn, tmp_path)
    run = created(store)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE li_log_chunks")
    assert store.li_log(run.run_id, 100).reason_code == "missing"  # no table yet: no li log, never an error
    assert store.health() == []  # made by the first runner that needs it: nothing for doctor to fix
    with (store.console_sink(run.run_id) as console, store.li_log_sink(run.run_id) as li_log,
          store.forward_console(run.run_id)):
        os.write(console, b"abc")
        os.write(li_log, b"li runner: completed\n")
    assert store.console_bytes(run.run_id, 0, 100) == (b"abc", 3)
    assert store.li_log_bytes(run.run_id, 0, 100) == (b"li runner: completed\n", 21)
    assert store.li_log(run.run_id, 100).value == "li runner: completed\n"
    assert not (tmp_path / run.run_id).exists()  # all of it in the store: the spool is gone
