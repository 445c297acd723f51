"""Queues on the PostgreSQL store: settings and the line in tables, slots and places
held by session-level advisory locks, which the server lets go of when the session ends (the
runner exits, is SIGKILLed, or its host dies and the connection drops).

    queues (name, settings, last_ticket)      one row per queue the store keeps
    queue_line (queue, ticket, run_id, held)  one row per waiter; `held` once its runner locked it

A place is the lock (hashtext('lionrun-line:'||queue), ticket) of the waiter's runner; a slot the
lock (hashtext('lionrun-slot:'||queue), n). The submitter cannot hand its session to the runner
it starts, so a row not yet `held` is a runner still starting: alive while its run has no end
and its row was made less than START_GRACE seconds ago. Tickets come from one row under its lock,
so the line is first come first served across every host of the store.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from lionrun.application.ports import Held, QueueBroken, RunNotFound, StoreRefused, Waiting
from lionrun.domain.queue import (
    QueueSettings,
    ahead_of,
    check_queue_name,
    entry_name,
    places_of,
    settings_of,
)
from lionrun.domain.run import RecordUnusable

START_GRACE = 60.0  # seconds a submitted run's runner has to take its place in line
INT4 = 2**31

TABLES = (
    """CREATE TABLE IF NOT EXISTS queues (
        name text PRIMARY KEY,
        settings text NOT NULL,
        last_ticket bigint NOT NULL DEFAULT -1)""",
    """CREATE TABLE IF NOT EXISTS queue_line (
        queue text NOT NULL,
        ticket bigint NOT NULL,
        run_id text NOT NULL,
        held boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (queue, ticket))""",
    "ALTER TABLE queue_line ADD COLUMN IF NOT EXISTS created_at timestamptz NOT NULL DEFAULT now()",
    # A waiter's priority (higher starts first; equal ones by ticket)
    "ALTER TABLE queue_line ADD COLUMN IF NOT EXISTS priority integer NOT NULL DEFAULT 0",
)
HELD_SLOTS = """SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND classid = (hashtext(%s)::bigint & 4294967295)::oid"""


class PgQueues:
    """The `RunQueues` port on a PgRunStore's database (and its connection: the session that
    holds this process's places and slots)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._ready = False

    def _cursor(self) -> Any:
        if not self._ready:
            with self.store._cursor() as cur:  # noqa: SLF001 - the store's one session holds the locks
                for statement in TABLES:
                    cur.execute(statement)
            self._ready = True
        return self.store._cursor()  # noqa: SLF001

    def settings(self, name: str) -> QueueSettings | None:
        check_queue_name(name)
        with self._cursor() as cur:
            cur.execute("SELECT settings FROM queues WHERE name = %s", (name,))
            row = cur.fetchone()
        return None if row is None else _parse(name, row[0])

    def change(self, name: str, change: Callable[[QueueSettings], QueueSettings]) -> QueueSettings:
        check_queue_name(name)
        with self._cursor() as cur, cur.connection.transaction():
            cur.execute("INSERT INTO queues (name, settings) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING",
                        (name, json.dumps(QueueSettings(name=name).to_dict())))
            cur.execute("SELECT settings FROM queues WHERE name = %s FOR UPDATE", (name,))
            changed = change(_parse(name, cur.fetchone()[0]))
            cur.execute("UPDATE queues SET settings = %s WHERE name = %s", (json.dumps(changed.to_dict()), name))
        return changed

    def names(self) -> list[str]:
        with self._cursor() as cur:
            cur.execute("SELECT name FROM queues ORDER BY name")
            return [str(row[0]) for row in cur.fetchall()]

    def enqueue(self, name: str, run_id: str, priority: int = 0) -> Waiting:
        """A ticket and a row in line; the runner takes the place's lock when it starts (`claim`)."""
        check_queue_name(name)
        with self._cursor() as cur, cur.connection.transaction():
            cur.execute("UPDATE queues SET last_ticket = last_ticket + 1 WHERE name = %s RETURNING last_ticket",
                        (name,))
            row = cur.fetchone()
            if row is None:
                raise StoreRefused(f"the queue {name} is not kept by the store")
            ticket = int(row[0])
            cur.execute("INSERT INTO queue_line (queue, ticket, run_id, priority) VALUES (%s, %s, %s, %s)",
                        (name, ticket, run_id, priority))
        return Waiting(queue=name, ticket=ticket, place=None)

    def claim(self, name: str, run_id: str, priority: int = 0) -> Waiting:
        """The runner takes its place: the lock of its row (a new row at the end when it has none)."""
        with self._cursor() as cur:
            cur.execute("SELECT ticket FROM queue_line WHERE queue = %s AND run_id = %s", (name, run_id))
            row = cur.fetchone()
        if row is None:
            return self.claim_new(name, run_id, priority)
        ticket = int(row[0])
        with self._cursor() as cur:
            cur.execute("SELECT pg_advisory_lock(hashtext(%s), %s)", (_line(name), ticket % INT4))
            cur.execute("UPDATE queue_line SET held = true WHERE queue = %s AND ticket = %s", (name, ticket))
        return Waiting(queue=name, ticket=ticket, place=None)

    def claim_new(self, name: str, run_id: str, priority: int = 0) -> Waiting:
        self.enqueue(name, run_id, priority)
        return self.claim(name, run_id, priority)

    def let_go(self, waiting: Waiting) -> None:
        """Nothing: the submitter never held the place (its runner takes it)."""

    def line(self, name: str) -> list[tuple[int, str]]:
        return [(ticket, run_id) for ticket, run_id, _ in self.places(name)]

    def places(self, name: str) -> list[tuple[int, str, int]]:
        """The line's (ticket, run id, priority), in the order it starts."""
        with self._cursor() as cur:
            cur.execute("SELECT ticket, run_id, priority FROM queue_line WHERE queue = %s", (name,))
            return places_of([entry_name(int(t), r, int(p)) for t, r, p in cur.fetchall()])

    def waiting(self, name: str) -> int:
        return sum(self._alive(name, ticket, run_id) for ticket, run_id in self.line(name))

    def first_in_line(self, name: str, run_id: str) -> bool:
        for ticket, other in ahead_of(self.line(name), run_id):
            if self._alive(name, ticket, other):
                return False
        return True

    def _alive(self, name: str, ticket: int, run_id: str) -> bool:
        """Whether the waiter of a row lives: its runner holds the row's lock, or it is still
        starting (not yet `held`, made within START_GRACE, its run not ended). A gone one's
        row is taken out."""
        with self._cursor() as cur:
            cur.execute("SELECT held, extract(epoch FROM now() - created_at) FROM queue_line "
                        "WHERE queue = %s AND ticket = %s", (name, ticket))
            row = cur.fetchone()
            if row is None:
                return False
            cur.execute("SELECT pg_try_advisory_lock(hashtext(%s), %s)", (_line(name), ticket % INT4))
            (free,) = cur.fetchone()
            if not free:
                return True
            cur.execute("SELECT pg_advisory_unlock(hashtext(%s), %s)", (_line(name), ticket % INT4))
        if not row[0] and float(row[1]) < START_GRACE and self._starting(run_id):
            return True
        with self._cursor() as cur:
            cur.execute("DELETE FROM queue_line WHERE queue = %s AND ticket = %s", (name, ticket))
        return False

    def _starting(self, run_id: str) -> bool:
        """A row not yet held, made less than START_GRACE ago: its runner is still starting unless
        its run already ended (a record not written yet is a submit still under way)."""
        try:
            return not self.store.read(run_id).end_recorded
        except RunNotFound:
            return True
        except RecordUnusable:
            return False

    def leave(self, name: str, run_id: str, waiting: Held | None) -> None:
        with self._cursor() as cur:
            cur.execute("DELETE FROM queue_line WHERE queue = %s AND run_id = %s RETURNING ticket", (name, run_id))
            for (ticket,) in cur.fetchall():
                cur.execute("SELECT pg_advisory_unlock(hashtext(%s), %s)", (_line(name), int(ticket) % INT4))

    def running(self, name: str) -> int:
        with self._cursor() as cur:
            cur.execute(HELD_SLOTS, (_slot(name),))
            return int(cur.fetchone()[0])

    def take_slot(self, name: str, limit: int | None) -> Held | None:
        """A slot's lock taken by this session (its number + 1), when fewer than `limit` are held."""
        held = self.running(name)
        if limit is not None and held >= limit:
            return None
        with self._cursor() as cur:
            for index in range(limit if limit is not None else held + 1):
                cur.execute("SELECT pg_try_advisory_lock(hashtext(%s), %s)", (_slot(name), index))
                if cur.fetchone()[0]:
                    return Held(index + 1)
        return None


def _line(name: str) -> str:
    return f"lionrun-line:{name}"


def _slot(name: str) -> str:
    return f"lionrun-slot:{name}"


def _parse(name: str, text: str) -> QueueSettings:
    try:
        return settings_of(name, text)
    except ValueError as exc:
        raise QueueBroken(name, f"its settings {'are ' if str(exc).startswith('malformed') else ''}{exc}") from exc
