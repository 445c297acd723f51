"""The PostgreSQL store's reads through libpq itself (adapters/libpq.py) answer what
the psycopg path answers, fail as it fails, and a status read imports no psycopg at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from lionrun.adapters import libpq
from lionrun.adapters.pg_store import PgRunStore, SchemaMissing
from lionrun.application.ports import RunNotFound, StoreUnavailable
from tests.integration.test_pg_store import created
from tests.pg import pg_store


@pytest.fixture(autouse=True)
def lean_available() -> None:
    if libpq.load() is None:
        pytest.skip("libpq cannot be loaded here (neither psycopg's bundled one nor the system's)")


def both(dsn: str, tmp_path: Any) -> tuple[PgRunStore, PgRunStore]:
    lean = pg_store(dsn, tmp_path / "a")
    heavy = PgRunStore(dsn, str(tmp_path / "b"), host_id="host-a")
    heavy._pq_missing = True  # reads through psycopg, as without libpq
    return lean, heavy


def test_a_record_and_run_files_read_the_same_through_libpq_and_psycopg(pg_dsn: str, tmp_path: Any) -> None:
    writer, heavy = both(pg_dsn, tmp_path)
    run = created(writer)
    odd = "x\u00e9\u2028\udcff" * 3  # non-ASCII, a line breaker, a lone surrogate escaped byte
    writer.write_text(run.run_id, "request.json", json.dumps({"k": odd}, ensure_ascii=False))
    writer.write_text(run.run_id, "manifest.json", json.dumps({"schema_version": 1, "legs": []}))
    lean = PgRunStore(pg_dsn, str(tmp_path / "c"), host_id="host-a")
    assert lean.read(run.run_id) == heavy.read(run.run_id)
    assert lean.read_text(run.run_id, "request.json") == heavy.read_text(run.run_id, "request.json")
    assert lean.manifest(run.run_id) == heavy.manifest(run.run_id)
    assert lean._pq is not None and lean._conn is None  # the reads made no psycopg connection
    for store in (lean, heavy):
        with pytest.raises(RunNotFound):
            store.read("20260101T000000-abcdef")
        with pytest.raises(FileNotFoundError):
            store.read_text(run.run_id, "nothing.txt")
        assert store.manifest("20260101T000000-abcdef").available is False


def test_a_dropped_lean_connection_is_made_again_and_the_read_answered(pg_dsn: str, tmp_path: Any) -> None:
    """A kept connection the server ended (a terminated backend, a restart) costs a read nothing:
    the read is asked once more on a new connection. The psycopg path's writes still fail that
    one call (tests/integration/test_pg_store.py), and a server that is not there is unavailable
    (below): a retry never hides an outage."""
    import psycopg

    lean, _ = both(pg_dsn, tmp_path)
    run = created(lean)
    lean.read(run.run_id)
    before = lean._pq
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
                      "AND pid <> pg_backend_pid()")
    assert lean.read(run.run_id).run_id == run.run_id
    assert lean._pq is not None and lean._pq is not before  # a new connection


def test_a_database_without_the_schema_is_schema_missing_on_the_lean_path(pg_dsn: str, tmp_path: Any) -> None:
    import psycopg

    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute("DROP TABLE IF EXISTS lionrun_schema CASCADE")
    with pytest.raises(SchemaMissing):
        PgRunStore(pg_dsn, str(tmp_path / "s"), host_id="host-a").read("20260101T000000-abcdef")


def test_a_server_that_is_not_there_is_unavailable_on_the_lean_path(tmp_path: Any) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = PgRunStore(f"postgresql://nobody@127.0.0.1:{port}/none", str(tmp_path / "s"), host_id="host-a")
    with pytest.raises(StoreUnavailable):
        store.read("20260101T000000-abcdef")


def test_a_status_read_on_postgresql_imports_no_psycopg(pg_dsn: str, tmp_path: Any, li_home: str) -> None:
    env = {**os.environ, "LI_HOME": li_home, "LI_STORE": pg_dsn}
    li = os.path.join(os.path.dirname(sys.executable), "li")
    subprocess.run([li, "store", "init", "--machine"], env=env, capture_output=True, check=True, timeout=60)
    run_id = json.loads(subprocess.run([li, "agent", "sh", "true", "--machine"], env=env, capture_output=True,
                                       check=True, timeout=60).stdout)["data"]["run_id"]
    subprocess.run([li, "job", "wait", run_id, "--max-wait", "30", "--machine"], env=env, capture_output=True,
                   check=True, timeout=60)
    probe = ("import sys; sys.argv = ['li', 'job', 'status', %r, '--machine']\n"
             "from lionrun.entrypoints.bootstrap import main\n"
             "main(); print('PSYCOPG' if any(m.split('.')[0] == 'psycopg' for m in sys.modules) else 'LEAN', file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe % run_id], env=env, capture_output=True, text=True,
                          check=True, timeout=60)
    assert json.loads(done.stdout)["data"]["outcome"] == "succeeded", done
    assert done.stderr.splitlines()[-1] == "LEAN", done
