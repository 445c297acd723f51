"""The PostgreSQL run store: the same ports as the filesystem store, for runs of many hosts.

One row per run in `runs` (the record as the JSON text the filesystem store would hold, so
`domain.run.parse_record` applies the very same untrusted-input rules), small run files in
`run_files`, the console as ordered chunks in `console_chunks` (li's own lines likewise in
`li_log_chunks`, apart from the work's bytes), and the artifacts listing (with
bodies up to a documented cap) in `artifacts`. The fenced write is a transaction: the row is
locked with `SELECT … FOR UPDATE` under `lock_timeout`, judged, and rewritten with
`UPDATE … WHERE generation = <judged>`; a lock not had in time is `StoreBusy`. A server that is
down, restarting, drops the connection or lets a statement run out its time is `StoreUnavailable`
(the runner waits it out, `application.outage`); one that refuses (permissions, a full or
read-only disk) is `StoreRefused`. Either way the verbs answer `unavailable`, never `internal`.
A connection found broken is dropped; the next call makes a new one.

psycopg is imported on first use only: a filesystem user never pays for it.
"""

from __future__ import annotations

import errno
import fcntl
import json
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from lionrun.adapters.clocks import SystemClock
from lionrun.adapters.processes import host_facts
from lionrun.adapters.safe_open import (
    UnsafeEntry,
    closing,
    list_tree,
    make_folder,
    open_file,
    open_folder,
    read_below,
    read_span,
    write_atomic,
)
from lionrun.application.outage import OUTAGE_SECONDS_DEFAULT, Outage
from lionrun.application.ports import (
    Held,
    ImportedArtifact,
    KeyTaken,
    RunNotFound,
    StoreBusy,
    StoreRefused,
    StoreUnavailable,
    WorkFolderRefused,
)
from lionrun.domain.availability import (
    MALFORMED,
    MISSING,
    NOT_YET_WRITTEN,
    TOO_LARGE,
    UNREADABLE,
    Availability,
    ConsoleAvailability,
)
from lionrun.domain.lifecycle import next_generation
from lionrun.domain.run import RecordUnusable, Run, is_run_id, make_run_id, parse_record
from lionrun.domain.untrusted import (
    MANIFEST_MAX_BYTES,
    TEXT_MAX_BYTES,
    Untrusted,
    check_size,
    parse_json,
)

if TYPE_CHECKING:
    import psycopg

    from lionrun.adapters.libpq import Connection, PqError

SCHEMA_VERSION = 1
NOTIFY_CHANNEL = "lionrun_runs"  # payload: the run id whose record was written
ARTIFACT_BODY_MAX = 16 * 1024 * 1024  # a larger artifact is listed with `available: false` (too_large)
CONSOLE_CHUNK_MAX = 64 * 1024
CONSOLE_FORWARD_INTERVAL = 0.2  # seconds between moves of the spooled console into the store
CONSOLE = "console.log"
LI_LOG = "li.log"  # li's own lines (the runner's stderr), spooled and moved in as the console is
CONNECT_TIMEOUT = 5.0  # seconds; a server that does not answer is `unavailable`, not a hang
STATEMENT_TIMEOUT = 30.0  # seconds a statement, or its wait for a lock, may take (then `unavailable`)

# SQLSTATEs of a server that did not answer this time but may the next: shutting down or starting
# up, the session terminated (pg_terminate_backend), a statement or lock timeout, too many
# clients, a serialization failure or deadlock, an idle session timed out. Class 08 (connection
# exceptions) too. Everything else the server says is a refusal.
TRANSIENT_STATES = frozenset({"57P01", "57P02", "57P03", "57P05", "57014", "55P03", "53300", "40001",
                              "40P01", "25P03"})
# A connection the server refused at once with one of these is not up yet (or going down); any
# other FATAL at connect (no such database or role, authentication) is a refusal.
TRANSIENT_AT_CONNECT = ("the database system is", "too many clients", "remaining connection slots")

# li's own lines, apart from the console; added to schema 1 as `queue_line`'s column was
LI_LOG_TABLE = """CREATE TABLE IF NOT EXISTS li_log_chunks (
        run_id text NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        start_offset bigint NOT NULL,
        body bytea NOT NULL,
        PRIMARY KEY (run_id, start_offset))"""

# The run each idempotency key names; the primary key makes one run per key, and the
# key goes with its run (ON DELETE CASCADE). Added to schema 1 as `li_log_chunks` was: made by
# `li store init`, or by the first submit with a key.
KEYS_TABLE = """CREATE TABLE IF NOT EXISTS idempotency_keys (
        key_name text PRIMARY KEY,
        run_id text NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        fingerprint text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now())"""
KEY_LOCK_SPACE = 7406039  # pg_advisory_lock(space, hash): the key's turn, let go when the session ends

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS lionrun_schema (
        version integer NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now())""",
    """CREATE TABLE IF NOT EXISTS runs (
        run_id text PRIMARY KEY,
        host_id text NOT NULL,
        generation integer NOT NULL DEFAULT 0,
        record text,
        written_at timestamptz NOT NULL DEFAULT now())""",
    "CREATE INDEX IF NOT EXISTS runs_recorded ON runs (run_id DESC) WHERE record IS NOT NULL",
    """CREATE TABLE IF NOT EXISTS run_files (
        run_id text NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        name text NOT NULL,
        body bytea NOT NULL,
        PRIMARY KEY (run_id, name))""",
    """CREATE TABLE IF NOT EXISTS console_chunks (
        run_id text NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        start_offset bigint NOT NULL,
        body bytea NOT NULL,
        PRIMARY KEY (run_id, start_offset))""",
    LI_LOG_TABLE,
    KEYS_TABLE,
    """CREATE TABLE IF NOT EXISTS artifacts (
        run_id text NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        name text NOT NULL,
        entry jsonb NOT NULL,
        body bytea,
        PRIMARY KEY (run_id, name))""",
)


TABLES = ("runs", "run_files", "console_chunks", "li_log_chunks", "idempotency_keys", "artifacts", "lionrun_schema")
# Added after schema 1 was first published: made by `li store init`, or by the first
# runner that writes to it; a reader of a database that has none yet finds no li log (missing).
LATER_TABLES = ("li_log_chunks", "idempotency_keys")


class _Stream(NamedTuple):
    """An append-only stream of a run kept as ordered chunks: its spooled file and run_files marker
    (`name`), and its table."""

    name: str
    table: str


CONSOLE_STREAM = _Stream(CONSOLE, "console_chunks")
LI_LOG_STREAM = _Stream(LI_LOG, "li_log_chunks")


class SchemaMissing(StoreRefused):
    """The database has no lionrun schema (run `li store init`), or one of another version."""


def _psycopg() -> Any:
    import psycopg

    return psycopg


class PgRunStore:
    """The run-record and run-file ports on one PostgreSQL database."""

    def __init__(self, dsn: str, spool: str, host_id: str | None = None, *,
                 connect_timeout: float = CONNECT_TIMEOUT, statement_timeout: float = STATEMENT_TIMEOUT,
                 outage: float = OUTAGE_SECONDS_DEFAULT) -> None:
        self.dsn = dsn
        self.spool = os.path.abspath(spool)  # local folder where a run's work writes its artifacts
        self.host_id = host_id or host_facts().host_id
        self.connect_timeout = _whole_seconds(connect_timeout)
        self.statement_timeout_ms = max(int(statement_timeout * 1000), 1)
        self.outage = outage  # how long the console's last move into the store waits out an outage
        self._conn: psycopg.Connection[Any] | None = None
        self._pq: Connection | None = None  # the lean read path's connection (adapters/libpq.py)
        self._pq_missing = False  # libpq could not be loaded: reads use psycopg too
        self._lock = threading.RLock()
        self._drain_lock = threading.Lock()
        self._li_log_ready: set[str] = set()  # runs whose li log (table and marker) this store made

    # -- connection ---------------------------------------------------------------------------

    def _connect(self, check_schema: bool = True) -> psycopg.Connection[Any]:
        """The connection (made once); a database without this li's schema version is SchemaMissing."""
        if self._conn is not None and not self._conn.closed:
            return self._conn
        self._drop()
        pg = _psycopg()
        limit = self.statement_timeout_ms
        try:
            conn: psycopg.Connection[Any] = pg.connect(
                self.dsn, autocommit=True, connect_timeout=self.connect_timeout,
                options=f"-c statement_timeout={limit} -c lock_timeout={limit}")
        except pg.Error as exc:
            why = _first_line(exc)
            if "FATAL:" in str(exc) and not any(phrase in str(exc) for phrase in TRANSIENT_AT_CONNECT):
                raise StoreRefused(f"the PostgreSQL store refused the connection: {why}") from None
            raise StoreUnavailable(f"the PostgreSQL store cannot be reached: {why}") from None
        if check_schema:
            try:
                found = _schema_version(conn)
            except pg.Error as exc:
                with suppress(Exception):
                    conn.close()
                raise self._refused(exc) from None
            if found != SCHEMA_VERSION:
                conn.close()
                raise self._schema_missing(found)
        self._conn = conn
        return conn

    @property
    def location(self) -> str:
        """The store's URL without its password (for people and answers)."""
        try:
            from psycopg.conninfo import conninfo_to_dict

            parts = conninfo_to_dict(self.dsn)
        except Exception:  # noqa: BLE001 - a URL psycopg cannot parse is still named, minus anything secret
            return "postgresql://…"
        host, port, db, user = (str(parts.get(k) or "") for k in ("host", "port", "dbname", "user"))
        return f"postgresql://{user + '@' if user else ''}{host}{':' + port if port else ''}/{db}"

    def describe(self) -> tuple[str, str]:
        return "postgresql", self.location

    def health(self) -> list[str]:
        """Connection, schema version and the privileges runs need; each problem in one sentence."""
        try:
            with self._cursor() as cur:
                problems = []
                for table in TABLES:
                    if table in LATER_TABLES:
                        cur.execute("SELECT to_regclass(%s) IS NOT NULL", (table,))
                        if not cur.fetchone()[0]:
                            continue  # made by the first runner that needs it
                    cur.execute("SELECT has_table_privilege(current_user, %s, 'SELECT,INSERT,UPDATE,DELETE')",
                                (table,))
                    (allowed,) = cur.fetchone()
                    if not allowed:
                        problems.append(f"this role may not read and write the table {table}")
                return problems
        except StoreRefused as exc:
            return [str(exc)]

    @contextmanager
    def _cursor(self, check_schema: bool = True) -> Iterator[Any]:
        """A cursor in autocommit mode; any database failure is StoreRefused, once reconnected."""
        pg = _psycopg()
        with self._lock:
            try:
                conn = self._connect(check_schema)
                with conn.cursor() as cur:
                    yield cur
            except (pg.errors.UndefinedTable, pg.errors.InsufficientPrivilege) as exc:
                raise SchemaMissing(f"the PostgreSQL store is not usable: {_first_line(exc)}") from None
            except pg.Error as exc:
                raise self._refused(exc) from None

    def _refused(self, exc: Exception) -> StoreRefused:
        """What a database error means to a caller: the server did not answer this time
        (StoreUnavailable: down, restarting, the connection dropped, a timeout) or it refused
        (StoreRefused); either way `unavailable`, never `internal`. A connection that failed is
        dropped: the next call makes a new one."""
        pg = _psycopg()
        if isinstance(exc, pg.OperationalError) or (self._conn is not None and self._conn.broken):
            self._drop()
        if _unavailable(exc, pg):
            return StoreUnavailable(f"the PostgreSQL store did not answer: {_first_line(exc)}")
        return StoreRefused(f"the PostgreSQL store refused: {_first_line(exc)}")

    def _drop(self) -> None:
        if self._conn is not None:
            with suppress(Exception):  # closing a broken connection may fail in any way
                self._conn.close()
        self._conn = None

    def close(self) -> None:
        with self._lock:
            self._drop()
            self._drop_lean()

    # -- the lean read path ----------------------------------------------------

    def _lean_rows(self, sql: str, params: Sequence[str]) -> list[list[str | None]] | None:
        """The rows of one read through libpq itself (no psycopg import: a status read's cost);
        None when libpq cannot be loaded here (the caller then reads through psycopg). Failures
        mean what they mean on the psycopg path: StoreUnavailable, SchemaMissing, StoreRefused."""
        from lionrun.adapters.libpq import PqError

        with self._lock:
            reused = self._pq is not None and self._pq.ok
            conn = self._lean()
            if conn is None:
                return None
            try:
                return conn.query(sql, params)
            except PqError as exc:
                if not (reused and exc.broken):
                    raise self._lean_refused(exc) from None
                self._drop_lean()  # a kept connection the server ended since (a restart, a
            conn = self._lean()    # terminated backend): a read is asked once more, afresh
            if conn is None:
                return None
            try:
                return conn.query(sql, params)
            except PqError as exc:
                raise self._lean_refused(exc) from None

    def _lean(self) -> Connection | None:
        if self._pq is not None and self._pq.ok:
            return self._pq
        self._drop_lean()
        if self._pq_missing:
            return None
        from lionrun.adapters import libpq

        lib = libpq.load()
        if lib is None:
            self._pq_missing = True
            return None
        limit = self.statement_timeout_ms
        try:
            conn = libpq.Connection(lib, self.dsn, self.connect_timeout,
                                    f"-c statement_timeout={limit} -c lock_timeout={limit}")
        except libpq.PqError as exc:
            raise self._lean_refused(exc) from None
        try:
            [[exists]] = conn.query("SELECT to_regclass('lionrun_schema') IS NOT NULL")
            found = None
            if exists == "t":
                [[version]] = conn.query("SELECT max(version) FROM lionrun_schema")
                found = None if version is None else int(version)
        except libpq.PqError as exc:
            conn.close()
            raise self._lean_refused(exc) from None
        if found != SCHEMA_VERSION:
            conn.close()
            raise self._schema_missing(found)
        self._pq = conn
        return conn

    def _schema_missing(self, found: int | None) -> SchemaMissing:
        """The refusal of a database whose lionrun schema is absent, or of another version."""
        return SchemaMissing(
            f"the PostgreSQL store {self.location} has no lionrun schema (run `li store init`)"
            if found is None else
            f"the PostgreSQL store {self.location} holds lionrun schema {found}; this li needs {SCHEMA_VERSION}")

    def _lean_refused(self, exc: PqError) -> StoreRefused:
        """A libpq failure as the psycopg path names it (`_refused`); a broken connection is dropped."""
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else "no message"
        if exc.broken:
            self._drop_lean()
        if exc.at_connect:
            if "FATAL:" in str(exc) and not any(phrase in str(exc) for phrase in TRANSIENT_AT_CONNECT):
                return StoreRefused(f"the PostgreSQL store refused the connection: {why}")
            return StoreUnavailable(f"the PostgreSQL store cannot be reached: {why}")
        state = exc.sqlstate
        if state is None or state.startswith("08") or state in TRANSIENT_STATES:
            return StoreUnavailable(f"the PostgreSQL store did not answer: {why}")
        if state in ("42P01", "42501"):  # no such table, no privilege: as `_cursor` says it
            return SchemaMissing(f"the PostgreSQL store is not usable: {why}")
        return StoreRefused(f"the PostgreSQL store refused: {why}")

    def _drop_lean(self) -> None:
        if self._pq is not None:
            with suppress(Exception):
                self._pq.close()
        self._pq = None

    # -- the schema -----------------------------------------------------------------------------

    def init_schema(self) -> int:
        """Create the schema when missing (idempotent); the schema version now in the database."""
        with self._cursor(check_schema=False) as cur:
            cur.execute("SELECT pg_advisory_lock(7406010)")
            try:
                from lionrun.adapters.pg_queues import (
                    TABLES as QUEUE_TABLES,  # the queues' tables, in their one home
                )

                for statement in (*SCHEMA, *QUEUE_TABLES):
                    cur.execute(statement)
                cur.execute("SELECT max(version) FROM lionrun_schema")
                (version,) = cur.fetchone()
                if version is None:
                    cur.execute("INSERT INTO lionrun_schema (version) VALUES (%s)", (SCHEMA_VERSION,))
                    version = SCHEMA_VERSION
            finally:
                cur.execute("SELECT pg_advisory_unlock(7406010)")
        return int(version)

    # -- run records ----------------------------------------------------------------------------

    def reserve(self, now: datetime) -> str:
        with self._cursor() as cur:
            while True:
                run_id = make_run_id(now, os.urandom(3).hex())
                cur.execute(
                    "INSERT INTO runs (run_id, host_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                    (run_id, self.host_id),
                )
                if cur.rowcount == 1:
                    return run_id

    def discard(self, run_id: str) -> None:
        _checked(run_id)
        with self._cursor() as cur:
            cur.execute("DELETE FROM runs WHERE run_id = %s", (run_id,))

    def create(self, run: Run) -> Run:
        first = run.evolve(generation=1)
        with self._cursor() as cur:
            cur.execute(
                "INSERT INTO runs (run_id, host_id, generation, record) VALUES (%s, %s, 1, %s) "
                "ON CONFLICT (run_id) DO UPDATE SET generation = 1, record = EXCLUDED.record, written_at = now() "
                "WHERE runs.record IS NULL",
                (run.run_id, self.host_id, _record_text(first)),
            )
            if cur.rowcount != 1:
                raise StoreRefused(f"run {run.run_id} already has a record")
        return first

    def read(self, run_id: str) -> Run:
        _checked(run_id)
        lean = self._lean_rows("SELECT record FROM runs WHERE run_id = $1", (run_id,))
        if lean is not None:
            row = lean[0] if lean else None
        else:
            with self._cursor() as cur:
                cur.execute("SELECT record FROM runs WHERE run_id = %s", (run_id,))
                row = cur.fetchone()
        if row is None or row[0] is None:
            raise RunNotFound(run_id)
        return parse_record(row[0].encode("utf-8", "surrogateescape"), run_id)

    def update(self, run_id: str, change: Callable[[Run], Run | None], lock_timeout: float = 10.0) -> Run | None:
        """The fenced write: lock the row (bounded wait), judge it, rewrite it only at that generation."""
        _checked(run_id)
        pg = _psycopg()
        with self._lock:
            try:
                conn = self._connect()
                with conn.transaction(), conn.cursor() as cur:
                    cur.execute("SELECT set_config('lock_timeout', %s, true)",
                                (f"{max(int(lock_timeout * 1000), 1)}ms",))
                    cur.execute("SELECT record, generation FROM runs WHERE run_id = %s FOR UPDATE", (run_id,))
                    row = cur.fetchone()
                    if row is None or row[0] is None:
                        raise RunNotFound(run_id)
                    current = parse_record(row[0].encode("utf-8", "surrogateescape"), run_id)
                    new = change(current)
                    if new is None:
                        return None
                    new = next_generation(current, new)
                    cur.execute(
                        "UPDATE runs SET record = %s, generation = %s, written_at = now() "
                        "WHERE run_id = %s AND generation = %s",
                        (_record_text(new), new.generation, run_id, row[1]),
                    )
                    if cur.rowcount != 1:  # cannot happen under the row lock; never publish blind
                        raise StoreBusy(f"run {run_id} changed while it was being written")
                    cur.execute("SELECT pg_notify(%s, %s)", (NOTIFY_CHANNEL, run_id))
                    return new
            except pg.errors.LockNotAvailable:
                raise StoreBusy(f"run {run_id} is being written by another process") from None
            except pg.Error as exc:  # a statement timeout among them: the server did not answer in time
                raise self._refused(exc) from None

    def run_ids(self) -> Iterator[str]:
        """Newest first, fetched a page at a time so a listing of 20 never reads 100k ids."""
        last: str | None = None
        while True:
            with self._cursor() as cur:
                if last is None:
                    cur.execute("SELECT run_id FROM runs WHERE record IS NOT NULL ORDER BY run_id DESC LIMIT 500")
                else:
                    cur.execute("SELECT run_id FROM runs WHERE record IS NOT NULL AND run_id < %s "
                                "ORDER BY run_id DESC LIMIT 500", (last,))
                page = [row[0] for row in cur.fetchall()]
            yield from (run_id for run_id in page if is_run_id(run_id))
            if len(page) < 500:
                return
            last = page[-1]

    def host_of(self, run_id: str) -> str | None:
        """The identity of the host that submitted the run (None when there is no such run)."""
        with self._cursor() as cur:
            cur.execute("SELECT host_id FROM runs WHERE run_id = %s", (_checked(run_id),))
            row = cur.fetchone()
        return None if row is None else str(row[0])

    def remove(self, run_id: str) -> None:
        with self._cursor() as cur:
            cur.execute("DELETE FROM runs WHERE run_id = %s", (_checked(run_id),))

    def sweep(self) -> None:
        """Nothing to finish: a removal is one transaction."""

    # -- idempotency keys -------------------------------------------------------------

    @contextmanager
    def holding_key(self, key: str) -> Iterator[None]:
        """The key's turn: a session-level advisory lock of this store's connection (the server lets
        go of it when the session ends), taken within the statement timeout; the table is made on
        first use in a database initialised before it existed."""
        pg = _psycopg()
        name = key_name(key)
        with self._lock:
            with self._cursor() as cur:
                cur.execute("SELECT to_regclass('idempotency_keys') IS NOT NULL")
                if not cur.fetchone()[0]:
                    cur.execute(KEYS_TABLE)
                try:
                    cur.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", (KEY_LOCK_SPACE, name))
                except pg.errors.LockNotAvailable:  # pragma: no cover - a session lock waits, bounded by lock_timeout
                    raise StoreBusy("the idempotency key is held by another submit") from None
            try:
                yield
            finally:
                with suppress(StoreRefused), self._cursor() as cur:
                    cur.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (KEY_LOCK_SPACE, name))

    def run_of_key(self, key: str) -> tuple[str, str] | None:
        with self._cursor() as cur:
            cur.execute("SELECT to_regclass('idempotency_keys') IS NOT NULL")
            if not cur.fetchone()[0]:
                return None
            cur.execute("SELECT run_id, fingerprint FROM idempotency_keys WHERE key_name = %s", (key_name(key),))
            row = cur.fetchone()
        return None if row is None else (str(row[0]), str(row[1]))

    def bind_key(self, key: str, run_id: str, fingerprint: str) -> None:
        """One INSERT: the primary key refuses a second run for the key (KeyTaken names the first)."""
        name = key_name(key)
        with self._cursor() as cur:
            cur.execute("INSERT INTO idempotency_keys (key_name, run_id, fingerprint) VALUES (%s, %s, %s) "
                        "ON CONFLICT (key_name) DO NOTHING", (name, _checked(run_id), fingerprint))
            if cur.rowcount == 1:
                return
            cur.execute("SELECT run_id FROM idempotency_keys WHERE key_name = %s", (name,))
            row = cur.fetchone()
        raise KeyTaken(str(row[0]) if row is not None else run_id)

    # -- run files ------------------------------------------------------------------------------

    def write_text(self, run_id: str, name: str, text: str) -> None:
        """A run file into the store; `artifacts/<name>` (a leg's answer) beside the work's own files."""
        body = text.encode("utf-8", "surrogateescape")
        if name.startswith("artifacts/"):
            leaf = name.removeprefix("artifacts/")
            if not leaf or "/" in leaf or leaf in (".", ".."):
                raise StoreRefused(f"cannot write {name}: one file name under artifacts/ expected")
            try:
                with self._spool_run(run_id) as folder, closing(make_folder("artifacts", folder)) as inner:
                    write_atomic(inner, leaf, body)
            except OSError as exc:
                raise StoreRefused(f"cannot write {name}: {exc}") from exc
            return
        with self._cursor() as cur:
            cur.execute(
                "INSERT INTO run_files (run_id, name, body) VALUES (%s, %s, %s) "
                "ON CONFLICT (run_id, name) DO UPDATE SET body = EXCLUDED.body",
                (_checked(run_id), name, body),
            )

    def read_text(self, run_id: str, name: str) -> str:
        try:
            return self._read_bounded(run_id, name, TEXT_MAX_BYTES).decode("utf-8", "surrogateescape")
        except Untrusted as exc:
            raise OSError(exc.detail) from None

    def artifact_bytes(self, run_id: str, name: str, limit: int) -> bytes:
        """An artifact the store holds (sealed at the run's end), at most `limit` bytes: what
        `li job output RUN --artifact NAME` prints. An entry with no body (a link or folder the
        work left, listed but never read) or a larger one is an OSError saying so."""
        with self._cursor() as cur:
            cur.execute("SELECT body IS NULL, coalesce(length(body), 0), substring(body FROM 1 FOR %s) "
                        "FROM artifacts WHERE run_id = %s AND name = %s", (limit, _checked(run_id), name))
            row = cur.fetchone()
        if row is None:
            raise FileNotFoundError(errno.ENOENT, f"artifacts/{name} is not in the store")
        if row[0]:
            raise OSError(errno.EINVAL, f"artifacts/{name} is not a regular file; it is never read")
        if int(row[1]) > limit:
            raise OSError(errno.EFBIG, f"artifacts/{name} is {int(row[1])} bytes, over the {limit} read at most")
        return bytes(row[2])

    def _read_bounded(self, run_id: str, name: str, limit: int) -> bytes:
        """A run file's bytes, never more than `limit` fetched; a larger one is Untrusted (too_large)."""
        lean = self._lean_rows("SELECT length(body), substring(body FROM 1 FOR $1::integer) FROM run_files "
                               "WHERE run_id = $2 AND name = $3", (str(limit), _checked(run_id), name))
        if lean is not None:
            if not lean:
                raise FileNotFoundError(name)
            check_size(int(lean[0][0] or 0), limit, name)
            from lionrun.adapters.libpq import bytea

            return bytea(lean[0][1])
        with self._cursor() as cur:
            cur.execute("SELECT length(body), substring(body FROM 1 FOR %s) FROM run_files "
                        "WHERE run_id = %s AND name = %s", (limit, _checked(run_id), name))
            row = cur.fetchone()
        if row is None:
            raise FileNotFoundError(name)
        check_size(int(row[0]), limit, name)
        return bytes(row[1])

    def work_artifacts_dir(self, run_id: str) -> str:
        """A private local folder (0700) the work writes into; `seal_artifacts` moves it into the store."""
        where = os.path.join(self.spool, _checked(run_id), "artifacts")
        try:
            with self._spool_run(run_id) as folder:
                os.close(make_folder("artifacts", folder))
        except OSError as exc:
            raise WorkFolderRefused(f"cannot make the artifacts folder: {exc}", where) from exc
        return where

    @contextmanager
    def _spool_run(self, run_id: str) -> Iterator[int]:
        """The run's spool folder on this host, made 0700 and opened without following links."""
        os.makedirs(os.path.dirname(self.spool), mode=0o700, exist_ok=True)
        with closing(make_folder(self.spool, None)) as spool, closing(make_folder(_checked(run_id), spool)) as folder:
            yield folder

    def console_location(self, run_id: str) -> str:
        """Where a person finds the console: in the store, read with `li job output`."""
        return f"postgresql:runs/{_checked(run_id)}/console.log"

    def console_sink(self, run_id: str) -> AbstractContextManager[Held]:
        """The run's console spooled on this host (0600, never through a link), for the runner's
        output; the runner forwards it into the store as ordered chunks (`forward_console`)."""
        return self._sink(run_id, CONSOLE_STREAM)

    def li_log_sink(self, run_id: str) -> AbstractContextManager[Held]:
        """The run's li log spooled on this host beside its console, forwarded into the store as it
        is. A store that does not answer now does not stop it: the spool keeps every line, and the
        first move that reaches the store makes the li log there."""
        return self._sink(run_id, LI_LOG_STREAM)

    def _ready_li_log(self, run_id: str) -> None:
        """`li_log_chunks` (made on first use in a database initialised before it existed) and the
        run's marker there: its li log exists from now on."""
        with self._cursor() as cur:
            cur.execute("SELECT to_regclass('li_log_chunks') IS NOT NULL")
            if not cur.fetchone()[0]:
                cur.execute(LI_LOG_TABLE)
        self._open_stream(run_id, LI_LOG_STREAM)
        self._li_log_ready.add(run_id)

    @contextmanager
    def _sink(self, run_id: str, stream: _Stream) -> Iterator[Held]:
        if stream is LI_LOG_STREAM:
            with suppress(StoreRefused):  # the first move makes it
                self._ready_li_log(_checked(run_id))
        else:
            self._open_stream(_checked(run_id), stream)
        try:
            with self._spool_run(run_id) as folder:
                fd = open_file(stream.name, folder, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        except OSError as exc:
            raise StoreRefused(f"cannot open the {stream.name} spool: {exc}") from exc
        with closing(fd):
            os.set_blocking(fd, True)
            if stream is LI_LOG_STREAM:
                # Held (shared) by every process that keeps this descriptor (the runner's stderr,
                # across its execs): the spool is a live runner's while it is held (`spooled_runs`).
                with suppress(OSError):
                    fcntl.flock(fd, fcntl.LOCK_SH)
            yield Held(fd)

    # -- evidence left in the spool --------------------------------------------------

    def spooled_runs(self) -> list[str]:
        """The runs whose folder is in this host's spool and whose li log no runner holds now."""
        try:
            names = sorted(os.listdir(self.spool))
        except OSError:
            return []
        return [name for name in names if is_run_id(name) and not self._held(name)]

    def _held(self, run_id: str) -> bool:
        try:
            fd = os.open(os.path.join(self.spool, run_id, LI_LOG), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
                         | os.O_NONBLOCK)
        except FileNotFoundError:
            return False
        except OSError:
            return True  # not a file li made: left alone
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(fd)
        return False

    def move_spool_in(self, run_id: str) -> str:
        """The console, li log and artifacts a run left in this host's spool, into the store (each
        stream goes on from what the store holds), then the spool removed; where it was."""
        where = os.path.join(self.spool, _checked(run_id))
        self._move_spooled(run_id)
        if os.path.isdir(os.path.join(where, "artifacts")):
            self.seal_artifacts(run_id)
        self._ready_li_log(run_id)
        self._append_text(run_id, LI_LOG_STREAM, f"li: what this run left in the spool of host {self.host_id} "
                                                 f"({where}) was moved into the store after its runner was gone\n")
        _remove_tree(where)
        return where

    @contextmanager
    def forward_console(self, run_id: str) -> Iterator[None]:
        """While the work runs (in the runner), move what its spooled console and li log get into
        the store, a chunk at a time in order; everything left is moved when the block ends.

        The spool keeps every byte while the store is away: a round that fails leaves them for
        the next, which goes on from what the store holds (chunks are keyed by their offset, so a
        chunk written twice is stored once). The last move waits out an outage of the server
        (`outage` seconds, as the end does); the spool is removed only once the store holds it all.
        """
        stop = threading.Event()

        def forward() -> None:
            while not stop.wait(CONSOLE_FORWARD_INTERVAL):
                self._drain_console(run_id)

        mover = threading.Thread(target=forward, name="li-console", daemon=True)
        mover.start()
        try:
            yield
        finally:
            stop.set()
            mover.join()
            try:
                Outage(SystemClock(), self.outage).call("the console", lambda: self._move_spooled(run_id))
            except (OSError, StoreRefused):
                pass  # the spool keeps what the store could not take
            else:  # all of it is in the store: nothing of the run stays here
                _remove_tree(os.path.join(self.spool, run_id))

    def _drain_console(self, run_id: str) -> bool:
        """One round of the forwarder: whether the store now holds the whole spooled console and li log."""
        try:
            self._move_spooled(run_id)
        except (OSError, StoreRefused):
            return False  # a spool the work replaced, or a store that is away: the next round tries again
        return True

    def _move_spooled(self, run_id: str) -> None:
        """Append the spooled console's and li log's bytes past what the store holds (one mover at
        a time). Raises StoreRefused (StoreUnavailable when the server did not answer) or OSError."""
        with self._drain_lock:
            for stream in (CONSOLE_STREAM, LI_LOG_STREAM):
                try:
                    with self._spool_run(run_id) as folder, closing(open_file(stream.name, folder)) as fd:
                        if stream is LI_LOG_STREAM and run_id not in self._li_log_ready:
                            self._ready_li_log(run_id)
                        offset = self._size(run_id, stream)
                        while chunk := read_span(fd, offset, CONSOLE_CHUNK_MAX):
                            self._append(run_id, stream, offset, chunk)
                            offset += len(chunk)
                except FileNotFoundError:
                    continue  # nothing of it was spooled here

    def _append(self, run_id: str, stream: _Stream, offset: int, chunk: bytes) -> None:
        """One chunk at its offset; a chunk already stored there (a retry) is left as it is."""
        with self._cursor() as cur:
            if chunk:
                cur.execute(f"INSERT INTO {stream.table} (run_id, start_offset, body) VALUES (%s, %s, %s) "
                            "ON CONFLICT DO NOTHING", (run_id, offset, chunk))

    def _open_stream(self, run_id: str, stream: _Stream) -> None:
        """The stream exists from now on, empty until its first chunk."""
        with self._cursor() as cur:
            cur.execute("INSERT INTO run_files (run_id, name, body) VALUES (%s, %s, '') "
                        "ON CONFLICT DO NOTHING", (run_id, stream.name))

    def append_console(self, run_id: str, text: str) -> None:
        """Append text to the console (tests and the store copy)."""
        self._append_text(run_id, CONSOLE_STREAM, text)

    def append_li_log(self, run_id: str, text: str) -> None:
        """Append one of li's own lines to the li log (tests)."""
        self._ready_li_log(_checked(run_id))
        self._append_text(run_id, LI_LOG_STREAM, text)

    def _append_text(self, run_id: str, stream: _Stream, text: str) -> None:
        self._open_stream(run_id, stream)
        self._append(run_id, stream, self._size(run_id, stream), text.encode("utf-8", "surrogateescape"))

    def _size(self, run_id: str, stream: _Stream) -> int:
        with self._cursor() as cur:
            cur.execute(f"SELECT coalesce(max(start_offset + length(body)), 0) FROM {stream.table} "
                        "WHERE run_id = %s", (run_id,))
            (size,) = cur.fetchone()
        return int(size)

    def console_bytes(self, run_id: str, offset: int, limit: int) -> tuple[bytes, int]:
        return self._bytes(run_id, CONSOLE_STREAM, offset, limit)

    def li_log_bytes(self, run_id: str, offset: int, limit: int) -> tuple[bytes, int]:
        try:
            return self._bytes(run_id, LI_LOG_STREAM, offset, limit)
        except SchemaMissing:  # a database that has no li log table yet holds no li log
            raise FileNotFoundError(LI_LOG) from None

    def _bytes(self, run_id: str, stream: _Stream, offset: int, limit: int) -> tuple[bytes, int]:
        _checked(run_id)
        with self._cursor() as cur:
            cur.execute("SELECT 1 FROM runs WHERE run_id = %s", (run_id,))
            if cur.fetchone() is None:
                raise FileNotFoundError(f"no run {run_id} to read {stream.name} from")
            cur.execute(
                f"SELECT start_offset, body FROM {stream.table} WHERE run_id = %s "
                "AND start_offset + length(body) > %s AND start_offset < %s ORDER BY start_offset",
                (run_id, offset, offset + max(limit, 0)))
            rows = cur.fetchall()
            cur.execute(f"SELECT coalesce(max(start_offset + length(body)), 0) FROM {stream.table} "
                        "WHERE run_id = %s", (run_id,))
            (size,) = cur.fetchone()
        if not rows and int(size) == 0 and not self._has(run_id, stream):
            raise FileNotFoundError(stream.name)
        data = b"".join(bytes(body) for _, body in rows)
        first = int(rows[0][0]) if rows else offset
        data = data[offset - first:][:max(limit, 0)]
        return data, int(size)

    def _has(self, run_id: str, stream: _Stream) -> bool:
        with self._cursor() as cur:
            cur.execute("SELECT 1 FROM run_files WHERE run_id = %s AND name = %s", (run_id, stream.name))
            return cur.fetchone() is not None

    def console(self, run_id: str, tail_chars: int) -> ConsoleAvailability:
        return self._tail(run_id, self.console_bytes, CONSOLE, tail_chars)

    def li_log(self, run_id: str, tail_chars: int) -> ConsoleAvailability:
        return self._tail(run_id, self.li_log_bytes, LI_LOG, tail_chars)

    @staticmethod
    def _tail(run_id: str, read: Callable[[str, int, int], tuple[bytes, int]], name: str,
              tail_chars: int) -> ConsoleAvailability:
        tail_chars = max(tail_chars, 0)
        try:
            _, size = read(run_id, 0, 0)
            start = max(0, size - tail_chars * 4)
            raw, size = read(run_id, start, size - start)
        except FileNotFoundError:
            return ConsoleAvailability.unavailable(MISSING, f"{name} does not exist")
        except StoreRefused as exc:
            return ConsoleAvailability.unavailable(UNREADABLE, f"{name}: {exc}")
        text = raw.decode("utf-8", errors="replace")
        if start > 0 and text:
            text = text[1:] if text[0] == "\ufffd" else text
        tail = text[-tail_chars:] if tail_chars > 0 else ""
        return ConsoleAvailability.tail(tail, start > 0 or len(tail) < len(text))

    def artifacts(self, run_id: str) -> Availability[list[dict[str, Any]]]:
        """The stored listing once the work has ended; before that, on the host the work runs on,
        its spooled folder listed live (links never followed); elsewhere, not yet written."""
        try:
            with self._cursor() as cur:
                cur.execute("SELECT 1 FROM run_files WHERE run_id = %s AND name = 'artifacts/'", (_checked(run_id),))
                sealed = cur.fetchone() is not None
                cur.execute("SELECT entry FROM artifacts WHERE run_id = %s ORDER BY name", (run_id,))
                rows = cur.fetchall()
        except StoreRefused as exc:
            return Availability.unavailable(UNREADABLE, f"artifacts/: {exc}")
        if sealed:
            return Availability.of([dict(row[0]) for row in rows])
        return self._spooled(run_id)

    def _spooled(self, run_id: str) -> Availability[list[dict[str, Any]]]:
        where = os.path.join(self.spool, run_id, "artifacts")
        try:
            with closing(open_folder(self.spool, None)) as spool, closing(open_folder(run_id, spool)) as folder, \
                    closing(open_folder("artifacts", folder)) as root:
                entries = list_tree(root, where)
        except FileNotFoundError:
            return Availability.unavailable(NOT_YET_WRITTEN, "artifacts/ is stored when the work ends")
        except UnsafeEntry as exc:
            return Availability.unavailable(exc.reason_code, f"artifacts/: {exc.detail}")
        except OSError as exc:
            return Availability.unavailable(UNREADABLE, f"artifacts/: {exc}")
        return Availability.of(sorted(entries, key=lambda e: str(e["name"])))

    def artifact_body(self, run_id: str, name: str) -> bytes | None:
        """An artifact's stored bytes (None when not stored: too large, not a regular file, or absent)."""
        with self._cursor() as cur:
            cur.execute("SELECT body FROM artifacts WHERE run_id = %s AND name = %s", (_checked(run_id), name))
            row = cur.fetchone()
        return None if row is None or row[0] is None else bytes(row[0])

    def seal_artifacts(self, run_id: str) -> None:
        """The work has ended: list its spooled folder (links never followed) and store the listing,
        with each regular file's bytes up to ARTIFACT_BODY_MAX; a larger one is listed unavailable.

        Raises OSError (UnsafeEntry for a planted folder) or StoreRefused; the spool is removed
        once the listing is stored.
        """
        self._move_spooled(_checked(run_id))  # the console is whole in the store before the end is
        shown = f"postgresql:runs/{run_id}/artifacts"
        with self._spool_run(run_id) as folder, closing(make_folder("artifacts", folder)) as root:
            entries = list_tree(root, shown)
            rows: list[tuple[str, str, bytes | None]] = []
            for entry in entries:
                stored = dict(entry)
                body: bytes | None = None
                if entry.get("type") == "file" and entry.get("sha256"):
                    if int(entry.get("size") or 0) > ARTIFACT_BODY_MAX:
                        stored.update(available=False, reason_code=TOO_LARGE)
                    else:
                        try:
                            body = read_below(root, str(entry["name"]), ARTIFACT_BODY_MAX)
                        except OSError as exc:
                            stored.update(available=False, reason_code=getattr(exc, "reason_code", UNREADABLE))
                        if body is not None and _sha256(body) != entry["sha256"]:
                            body = None  # changed since it was listed: never stored under another digest
                            stored.update(available=False, reason_code=UNREADABLE)
                rows.append((str(entry["name"]), json.dumps(stored), body))
        with self._cursor() as cur:
            for name, entry_text, body in rows:
                cur.execute("INSERT INTO artifacts (run_id, name, entry, body) VALUES (%s, %s, %s, %s) "
                            "ON CONFLICT (run_id, name) DO UPDATE SET entry = EXCLUDED.entry, body = EXCLUDED.body",
                            (run_id, name, entry_text, body))
            cur.execute("INSERT INTO run_files (run_id, name, body) VALUES (%s, 'artifacts/', '') "
                        "ON CONFLICT DO NOTHING", (run_id,))
        _remove_tree(os.path.join(self.spool, run_id, "artifacts"))

    artifact_body_max = ARTIFACT_BODY_MAX

    def import_run(self, run: Run, files: Mapping[str, str], console: Iterable[bytes] | None,
                   artifacts: Sequence[ImportedArtifact] | None, li_log: Iterable[bytes] | None = None) -> bool:
        """A whole run of another store in one transaction (`li store copy`): the record as is
        (its generation and host kept), its files, console and li log chunks and artifacts listing.
        False, writing nothing, when this store already holds the run."""
        run_id = _checked(run.run_id)
        pg = _psycopg()
        with self._lock:
            try:
                conn = self._connect()
                with conn.transaction(), conn.cursor() as cur:
                    cur.execute(
                        "INSERT INTO runs (run_id, host_id, generation, record) VALUES (%s, %s, %s, %s) "
                        "ON CONFLICT DO NOTHING",
                        (run_id, run.host or "", run.generation, _record_text(run)))
                    if cur.rowcount != 1:
                        return False
                    for name, text in files.items():
                        cur.execute("INSERT INTO run_files (run_id, name, body) VALUES (%s, %s, %s)",
                                    (run_id, name, text.encode("utf-8", "surrogateescape")))
                    if li_log is not None:
                        cur.execute(LI_LOG_TABLE)
                    for stream, chunks in ((CONSOLE_STREAM, console), (LI_LOG_STREAM, li_log)):
                        if chunks is not None:
                            _import_chunks(cur, run_id, stream, chunks)
                    if artifacts is not None:
                        for item in artifacts:
                            body = item.body if item.body is not None and len(item.body) <= ARTIFACT_BODY_MAX \
                                else None
                            cur.execute("INSERT INTO artifacts (run_id, name, entry, body) VALUES (%s, %s, %s, %s)",
                                        (run_id, str(item.entry["name"]), json.dumps(dict(item.entry)), body))
                        cur.execute("INSERT INTO run_files (run_id, name, body) VALUES (%s, 'artifacts/', '')",
                                    (run_id,))
                    cur.execute("SELECT pg_notify(%s, %s)", (NOTIFY_CHANNEL, run_id))
                    return True
            except pg.Error as exc:
                raise self._refused(exc) from None

    def manifest(self, run_id: str) -> Availability[dict[str, Any]]:
        try:
            data = parse_json(self._read_bounded(run_id, "manifest.json", MANIFEST_MAX_BYTES), "manifest.json")
        except FileNotFoundError:
            return Availability.unavailable(MISSING, "manifest.json does not exist (yet)")
        except (OSError, StoreRefused) as exc:
            return Availability.unavailable(UNREADABLE, f"manifest.json: {exc}")
        except Untrusted as exc:
            return Availability.unavailable(exc.reason_code, exc.detail)
        if not isinstance(data, dict):
            return Availability.unavailable(MALFORMED, "manifest.json is not a JSON object")
        return Availability.of(data)


class PgRunChanges:
    """`RunChanges` on the PostgreSQL store: LISTEN on the channel every fenced write NOTIFYs
    (in the writing transaction, so a notice means the record is there), one connection a watch.
    A server that cannot be reached degrades the watch to the caller's poll: never a missed end."""

    def __init__(self, dsn: str, connect_timeout: float = CONNECT_TIMEOUT) -> None:
        self.dsn = dsn
        self.connect_timeout = _whole_seconds(connect_timeout)

    def watch(self, run_ids: Sequence[str]) -> PgRunWatch:
        return PgRunWatch(self.dsn, {run_id for run_id in run_ids if is_run_id(run_id)}, self.connect_timeout)


class PgRunWatch:
    def __init__(self, dsn: str, run_ids: set[str], connect_timeout: int = int(CONNECT_TIMEOUT)) -> None:
        self._run_ids = run_ids
        self._conn: Any = None
        if not run_ids:
            return
        pg = _psycopg()
        try:
            self._conn = pg.connect(dsn, autocommit=True, connect_timeout=connect_timeout)
            self._conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
        except pg.Error:
            self.close()

    def wait(self, timeout: float) -> bool:
        if self._conn is None:
            threading.Event().wait(max(timeout, 0.0))  # no watch: the poll sees the change
            return False
        pg = _psycopg()
        deadline = time.monotonic() + max(timeout, 0.0)
        try:
            while (left := deadline - time.monotonic()) > 0:
                for notice in self._conn.notifies(timeout=left, stop_after=1):
                    if notice.payload in self._run_ids:
                        return True  # one of ours was written (another run's write waits on)
        except pg.Error:
            self.close()
            return True  # the watch is gone: observe again now, then poll
        return False

    def close(self) -> None:
        if self._conn is not None:
            with suppress(Exception):
                self._conn.close()
            self._conn = None


def _import_chunks(cur: Any, run_id: str, stream: _Stream, chunks: Iterable[bytes]) -> None:
    """A stream's marker and its chunks in order, inside the caller's transaction."""
    cur.execute("INSERT INTO run_files (run_id, name, body) VALUES (%s, %s, '')", (run_id, stream.name))
    offset = 0
    for chunk in chunks:  # a source that fails mid-way undoes the whole import
        if chunk:
            cur.execute(f"INSERT INTO {stream.table} (run_id, start_offset, body) VALUES (%s, %s, %s)",
                        (run_id, offset, chunk))
            offset += len(chunk)


def _schema_version(conn: Any) -> int | None:
    with conn.cursor() as cur:
        cur.execute("SELECT to_regclass('lionrun_schema') IS NOT NULL")
        (exists,) = cur.fetchone()
        if not exists:
            return None
        cur.execute("SELECT max(version) FROM lionrun_schema")
        (version,) = cur.fetchone()
    return None if version is None else int(version)


def _checked(run_id: str) -> str:
    if not is_run_id(run_id):
        raise RunNotFound(run_id)
    return run_id


def _record_text(run: Run) -> str:
    return json.dumps(run.to_dict(), sort_keys=True)


def _remove_tree(path: str) -> None:
    """shutil.rmtree, imported when a spool is removed: a read never loads shutil (nor bz2, lzma)."""
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _sha256(body: bytes) -> str:
    import hashlib  # only when artifacts are sealed: a read never loads OpenSSL's hashes

    return hashlib.sha256(body).hexdigest()


def _whole_seconds(seconds: float) -> int:
    """libpq's connect_timeout counts whole seconds (and takes less than 2 as 2)."""
    return max(math.ceil(seconds), 1)


def _unavailable(exc: Exception, pg: Any) -> bool:
    """Whether a database error is the server not answering this time (rather than refusing)."""
    state = getattr(exc, "sqlstate", None)
    if state is None:  # no answer from a server at all: the connection failed or was closed
        return isinstance(exc, pg.OperationalError)
    return state.startswith("08") or state in TRANSIENT_STATES


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


__all__ = ["PgRunChanges", "PgRunStore", "RecordUnusable", "SchemaMissing"]

if TYPE_CHECKING:
    from lionrun.application.ports import RunFiles, RunImport, RunRecords

    def _keeps_both_ports(store: PgRunStore) -> tuple[RunRecords, RunFiles, RunImport]:
        """mypy holds this store to both run ports: a method that drifts from its port fails the check."""
        return store, store, store


def key_name(key: str) -> str:
    """domain.idempotency's name of a key, imported on first use (a read never pays for hashlib)."""
    from lionrun.domain.idempotency import key_name as name

    return name(key)
