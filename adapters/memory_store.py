"""An in-memory store of both run ports (`RunRecords`, `RunFiles`) for tests and other programs' tests.

The same semantics as the filesystem one.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lionrun.application.ports import Held, KeyTaken, RunNotFound
from lionrun.domain.availability import MALFORMED, MISSING, Availability, ConsoleAvailability
from lionrun.domain.lifecycle import next_generation
from lionrun.domain.run import Run, is_run_id, make_run_id, parse_record

CONSOLE = "console.log"
LI_LOG = "li.log"


class MemoryRunStore:
    """Keeps records as serialized JSON so a record read here is as detached as one read from disk."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._records: dict[str, str] = {}
        self._reserved: set[str] = set()
        self._files: dict[tuple[str, str], str] = {}
        self._artifacts: dict[str, dict[str, bytes]] = {}
        self._counter = 0
        self._keys: dict[str, tuple[str, str]] = {}  # idempotency key -> (run id, fingerprint)
        self._key_turns: dict[str, threading.Lock] = {}
        self.reads: list[str] = []

    def describe(self) -> tuple[str, str]:
        return "filesystem", "memory://runs"

    def init_schema(self) -> int | None:
        return None

    def health(self) -> list[str]:
        return []

    def reserve(self, now: datetime) -> str:
        with self._lock:
            self._counter += 1
            run_id = make_run_id(now, f"{self._counter:06x}")
            self._reserved.add(run_id)
            self._artifacts[run_id] = {}
            return run_id

    def discard(self, run_id: str) -> None:
        with self._lock:
            self._reserved.discard(run_id)
            self._records.pop(run_id, None)

    def create(self, run: Run) -> Run:
        first = run.evolve(generation=1)
        with self._lock:
            self._records[run.run_id] = json.dumps(first.to_dict())
        return first

    def read(self, run_id: str) -> Run:
        self.reads.append(run_id)
        with self._lock:
            raw = self._records.get(run_id)
        if raw is None:
            raise RunNotFound(run_id)
        return parse_record(raw.encode("utf-8", "surrogateescape"), run_id)  # the same rules as on disk

    def update(self, run_id: str, change: Callable[[Run], Run | None], lock_timeout: float = 10.0) -> Run | None:
        with self._lock:
            current = self.read(run_id)
            new = change(current)
            if new is None:
                return None
            new = next_generation(current, new)
            self._records[run_id] = json.dumps(new.to_dict())
            return new

    def put_raw(self, run_id: str, raw: str) -> None:
        """Store arbitrary record text (corrupt records for tests)."""
        with self._lock:
            self._records[run_id] = raw

    def run_ids(self) -> Iterator[str]:
        with self._lock:
            ids = sorted((i for i in self._records if is_run_id(i)), reverse=True)
        return iter(ids)

    def write_text(self, run_id: str, name: str, text: str) -> None:
        with self._lock:
            self._files[(run_id, name)] = text
            if name.startswith("artifacts/"):  # listed like a file written under artifacts/ on disk
                body = text.encode("utf-8", "surrogateescape")
                self._artifacts.setdefault(run_id, {})[name.removeprefix("artifacts/")] = body

    def read_text(self, run_id: str, name: str) -> str:
        with self._lock:
            if (run_id, name) not in self._files:
                raise FileNotFoundError(name)
            return self._files[(run_id, name)]

    def work_artifacts_dir(self, run_id: str) -> str:
        """A name for the work's folder; nothing is written there (answers arrive by `write_text`)."""
        with self._lock:
            self._artifacts.setdefault(run_id, {})
        return _shown(run_id, "artifacts")

    def seal_artifacts(self, run_id: str) -> None:
        """Nothing to do: the work's artifacts folder is already the store's."""

    def forward_console(self, run_id: str) -> AbstractContextManager[None]:
        """Nothing to move: the console sink writes the store's own console."""
        return nullcontext()

    def console_location(self, run_id: str) -> str:
        return _shown(run_id, CONSOLE)

    @contextmanager
    def console_sink(self, run_id: str) -> Iterator[Held]:
        """Nothing to append to in memory: the child's output goes to /dev/null."""
        fd = os.open(os.devnull, os.O_WRONLY)
        try:
            yield Held(fd)
        finally:
            os.close(fd)

    def li_log_sink(self, run_id: str) -> AbstractContextManager[Held]:
        """As the console's: in memory li's lines arrive by `append_li_log`."""
        return self.console_sink(run_id)

    def console_bytes(self, run_id: str, offset: int, limit: int) -> tuple[bytes, int]:
        return self._bytes(run_id, CONSOLE, offset, limit)

    def li_log_bytes(self, run_id: str, offset: int, limit: int) -> tuple[bytes, int]:
        return self._bytes(run_id, LI_LOG, offset, limit)

    def _bytes(self, run_id: str, name: str, offset: int, limit: int) -> tuple[bytes, int]:
        with self._lock:
            text = self._files.get((run_id, name))
        if text is None:
            raise FileNotFoundError(name)
        raw = text.encode("utf-8", "surrogateescape")
        return raw[offset:offset + max(limit, 0)], len(raw)

    def append_console(self, run_id: str, text: str) -> None:
        self._append(run_id, CONSOLE, text)

    def append_li_log(self, run_id: str, text: str) -> None:
        """One of li's own lines, apart from the console (what the runner's stderr gets on disk)."""
        self._append(run_id, LI_LOG, text)

    def _append(self, run_id: str, name: str, text: str) -> None:
        with self._lock:
            self._files[(run_id, name)] = self._files.get((run_id, name), "") + text

    def put_artifact(self, run_id: str, name: str, body: bytes) -> None:
        with self._lock:
            self._artifacts.setdefault(run_id, {})[name] = body

    def artifact_bytes(self, run_id: str, name: str, limit: int) -> bytes:
        with self._lock:
            body = self._artifacts.get(run_id, {}).get(name)
        if body is None or len(body) > limit:
            raise OSError(f"artifacts/{name} cannot be read")
        return body

    def console(self, run_id: str, tail_chars: int) -> ConsoleAvailability:
        return self._tail(run_id, CONSOLE, tail_chars)

    def li_log(self, run_id: str, tail_chars: int) -> ConsoleAvailability:
        return self._tail(run_id, LI_LOG, tail_chars)

    def _tail(self, run_id: str, name: str, tail_chars: int) -> ConsoleAvailability:
        with self._lock:
            text = self._files.get((run_id, name))
        if text is None:
            return ConsoleAvailability.unavailable(MISSING, f"{name} does not exist")
        tail = text[-tail_chars:] if tail_chars > 0 else ""
        return ConsoleAvailability.tail(tail, len(tail) < len(text))

    def artifacts(self, run_id: str) -> Availability[list[dict[str, Any]]]:
        with self._lock:
            files = self._artifacts.get(run_id)
        if files is None:
            return Availability.unavailable(MISSING, "artifacts/ does not exist")
        return Availability.of([
            {"name": name, "path": _shown(run_id, f"artifacts/{name}"), "size": len(body),
             "sha256": hashlib.sha256(body).hexdigest(), "type": "file", "link": None}
            for name, body in sorted(files.items())
        ])

    def manifest(self, run_id: str) -> Availability[dict[str, Any]]:
        with self._lock:
            raw = self._files.get((run_id, "manifest.json"))
        if raw is None:
            return Availability.unavailable(MISSING, "manifest.json does not exist (yet)")
        try:
            data = json.loads(raw)
        except ValueError as exc:
            return Availability.unavailable(MALFORMED, str(exc))
        if not isinstance(data, dict):
            return Availability.unavailable(MALFORMED, "manifest.json is not a JSON object")
        return Availability.of(data)

    # -- idempotency keys, as the filesystem store keeps them ------------------------

    @contextmanager
    def holding_key(self, key: str) -> Iterator[None]:
        with self._lock:
            turn = self._key_turns.setdefault(key, threading.Lock())
        with turn:
            yield

    def run_of_key(self, key: str) -> tuple[str, str] | None:
        with self._lock:
            found = self._keys.get(key)
            if found is None or (found[0] not in self._records and found[0] not in self._reserved):
                return None
            return found

    def bind_key(self, key: str, run_id: str, fingerprint: str) -> None:
        with self._lock:
            found = self.run_of_key(key)
            if found is not None:
                raise KeyTaken(found[0])
            self._keys[key] = (run_id, fingerprint)

    def remove(self, run_id: str) -> None:
        """Atomic under the store's lock, as the filesystem store's rename is; a missing run is a no-op."""
        with self._lock:
            self._records.pop(run_id, None)
            self._reserved.discard(run_id)
            self._artifacts.pop(run_id, None)
            for key in [k for k in self._files if k[0] == run_id]:
                del self._files[key]

    def sweep(self) -> None:
        """Nothing to finish: a removal here is one step under the store's lock."""


def _shown(run_id: str, name: str) -> str:
    """Where a person would be told a run file is; nothing ever opens it."""
    return f"memory://runs/{run_id}/{name}"


if TYPE_CHECKING:
    from lionrun.application.ports import RunFiles, RunRecords

    def _keeps_both_ports(store: MemoryRunStore) -> tuple[RunRecords, RunFiles]:
        """mypy holds this store to both run ports: a method that drifts from its port fails the check."""
        return store, store
