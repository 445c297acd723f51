"""The PostgreSQL server the store tests use: `LI_TEST_POSTGRES` names it (`.ci/run` starts one with
`tools/pg_local.sh`). Without it a PostgreSQL test is skipped locally and fails in CI, never
silently passing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

TABLES = ("artifacts", "console_chunks", "run_files", "runs", "lionrun_schema")


def server_dsn() -> str:
    dsn = os.environ.get("LI_TEST_POSTGRES", "")
    if not dsn:
        if os.environ.get("CI"):
            pytest.fail("LI_TEST_POSTGRES is not set: .ci/run starts PostgreSQL with tools/pg_local.sh")
        pytest.skip("no PostgreSQL server: start one with `tools/pg_local.sh up /tmp/li-pg` and set "
                    "LI_TEST_POSTGRES to the DSN it prints")
    return dsn


def worker_dsn(dsn: str, worker: str) -> str:
    """A database of this xdist worker's own on the same server (made once), as a DSN."""
    import psycopg

    name = "lionrun_" + re.sub(r"[^a-z0-9_]", "_", worker.lower())
    with psycopg.connect(dsn, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')
    parts = psycopg.conninfo.conninfo_to_dict(dsn)
    user = f"{parts['user']}@" if parts.get("user") else ""
    return f"postgresql://{user}{parts.get('host', '127.0.0.1')}:{parts.get('port', 5432)}/{name}"


@pytest.fixture
def pg_dsn(request: pytest.FixtureRequest) -> Iterator[str]:
    """A DSN of an empty lionrun database (schema made, every table empty) for one test."""
    import psycopg

    worker = getattr(request.config, "workerinput", {}).get("workerid", "main")
    dsn = worker_dsn(server_dsn(), worker)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS " + ", ".join(TABLES) + " CASCADE")
    yield dsn


def pg_store(dsn: str, spool: Any, host_id: str = "host-a") -> Any:
    from adapters.pg_store import PgRunStore

    store = PgRunStore(dsn, str(spool), host_id=host_id)
    store.init_schema()
    return store
