"""What the PostgreSQL store's fault tests share (tests/e2e/test_pg_store_faults.py and
test_pg_store_bounds.py): a private server each module may stop, a li on it or on the shared test
server, and the reads that look at a run from outside li (its stored record, the runner's spool).

Stopping a server is done on a server of the module's own (`PrivateServer`): the shared test
server is used by parallel workers and is never stopped.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.pg import PrivateServer
from tests.support import machine

RETRYING = "li runner: the store is unavailable, retrying the "
# "At once" is told from "after a wait li must not make" by a gap no load bridges: the waits li
# must not make are set to WAIT_NOT_MADE seconds, and an answer must come within AT_ONCE. (A bound
# of 8 s against the 5 s default connect timeout failed at 9 s of wall time when CI's 200-run load
# test, at load 28 on 2 cores, ran beside it; the same calls take under 1 s on a quiet machine.)
WAIT_NOT_MADE = 40
AT_ONCE = 25


@pytest.fixture(scope="module")
def server() -> Iterator[PrivateServer]:
    # Not under pytest's temporary folder: each xdist worker makes that private (0700) again at its
    # start, and the server runs as the `postgres` user under root (CI).
    private = PrivateServer(os.path.join(tempfile.mkdtemp(prefix="li-pg-private-"), "pg"))
    try:
        yield private
    finally:
        private.down()


@pytest.fixture
def private(server: PrivateServer, li_home: str) -> Iterator[dict[str, str]]:
    """The environment of a li on the private server (schema made); the server is running again after the test."""
    env = {"LI_STORE": server.dsn, "LI_STORE_CONNECT_TIMEOUT": str(WAIT_NOT_MADE)}
    assert machine("store", "init", home=li_home, env=env).data["schema_version"] == 1
    try:
        yield env
    finally:
        if not server.running:
            server.start()


@pytest.fixture
def shared(pg_dsn: str, li_home: str) -> dict[str, str]:
    env = {"LI_STORE": pg_dsn}
    machine("store", "init", home=li_home, env=env)
    return env


def submit(home: str, env: dict[str, str], script: str) -> str:
    run_id: str = machine("agent", "--detach", "sh", script, home=home, env=env).data["run_id"]
    return run_id


def stored(dsn: str, run_id: str) -> tuple[dict[str, Any], list[tuple[int, bytes]]]:
    """The run's record as stored, and its console chunks (offset, bytes) in order."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        (record,) = conn.execute("SELECT record FROM runs WHERE run_id = %s", (run_id,)).fetchone()
        chunks = conn.execute("SELECT start_offset, body FROM console_chunks WHERE run_id = %s "
                              "ORDER BY start_offset", (run_id,)).fetchall()
    return json.loads(record), [(int(offset), bytes(body)) for offset, body in chunks]


def until(condition: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def spooled(home: str, run_id: str, name: str = "console.log") -> str:
    """The console (or the li log) as the runner spools it on this host (what the store has not taken yet too)."""
    try:
        with open(os.path.join(home, "spool", run_id, name), encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return ""


def console_has(home: str, env: dict[str, str], run_id: str, text: str) -> bool:
    answer = machine("job", "output", run_id, home=home, env=env).envelope
    return bool(answer["ok"] and text in (answer["data"]["console"]["value"] or ""))
