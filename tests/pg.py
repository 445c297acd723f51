"""The PostgreSQL server the store tests use: `LI_TEST_POSTGRES` names it (`.ci/run` starts one with
`tools/pg_local.sh`). Without it a PostgreSQL test is skipped locally and fails in CI, never
silently passing.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

PG_LOCAL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools", "pg_local.sh")

TABLES = ("artifacts", "console_chunks", "li_log_chunks", "idempotency_keys", "run_files", "runs", "lionrun_schema", "queue_line", "queues")


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
    from lionrun.adapters.pg_store import PgRunStore

    store = PgRunStore(dsn, str(spool), host_id=host_id)
    store.init_schema()
    return store


class PrivateServer:
    """A PostgreSQL server of one test module's own (`tools/pg_local.sh up`), which its tests may
    stop and start again (its data kept): the shared test server must never be stopped.

    Needs only Debian's postgresql binaries (which `.ci/run` installs); without them the tests
    are skipped locally and fail in CI, never silently passing.
    """

    def __init__(self, folder: str) -> None:
        if not glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"):
            if os.environ.get("CI"):
                pytest.fail("Debian's postgresql is not installed: .ci/run installs it for tools/pg_local.sh")
            pytest.skip("no PostgreSQL binaries (/usr/lib/postgresql/*/bin): install Debian's postgresql")
        self.folder = folder
        self.dsn = self._tool("up").strip().splitlines()[-1]
        self.running = True

    def _tool(self, action: str) -> str:
        done = subprocess.run([PG_LOCAL, action, self.folder], capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0, (action, done.stdout, done.stderr)
        return done.stdout

    def stop(self) -> None:
        self._tool("stop")
        self.running = False

    def start(self) -> None:
        self._tool("start")
        self.running = True

    def down(self) -> None:
        self._tool("down")
        with contextlib.suppress(OSError):
            os.rmdir(os.path.dirname(self.folder))
