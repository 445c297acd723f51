"""What an `li` acting for a confined run's work may see of the store: that run's children only
(item 2; the broker is `adapters/broker.py`).

`ChildrenOf(store, parent)` is the store as such an `li` gets it: a run it submits records
`parent`, and every other run is no run at all (RunNotFound; absent from `run_ids`), so reads,
waits and kills reach the runs the work started and nothing else, through every verb alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from lionrun.application.ports import Held, RunNotFound, StoreRefused
from lionrun.domain.availability import Availability, ConsoleAvailability
from lionrun.domain.run import Run


class ChildrenOf:
    """Both run ports over `store`, seen by an `li` acting for run `parent`'s work."""

    def __init__(self, store: Any, parent: str) -> None:
        self._store = store
        self.parent = parent
        self._making: set[str] = set()  # the ids this li reserved: the runs it is making

    @property
    def own_record(self) -> Any:
        """The store itself, for the one thing the work may do to its own run's record: put a
        permission request to a person and read the answer (`li job approval-request`)."""
        return self._store

    def _child(self, run_id: str) -> str:
        """`run_id` when it is a child of `parent`; else RunNotFound, as for a run that is not."""
        if self._store.read(run_id).parent != self.parent:
            raise RunNotFound(run_id)
        return run_id

    def _made_here(self, run_id: str) -> str:
        """`run_id` when this li is making it (reserved here) or it is a child; else RunNotFound."""
        return run_id if run_id in self._making else self._child(run_id)

    # -- RunRecords -------------------------------------------------------------------------------

    def reserve(self, now: datetime) -> str:
        reserved: str = self._store.reserve(now)
        self._making.add(reserved)
        return reserved

    def discard(self, run_id: str) -> None:
        self._store.discard(self._made_here(run_id))

    def create(self, run: Run) -> Run:
        created: Run = self._store.create(run.evolve(parent=self.parent))
        return created

    def read(self, run_id: str) -> Run:
        run: Run = self._store.read(run_id)
        if run.parent != self.parent:
            raise RunNotFound(run_id)
        return run

    def update(self, run_id: str, change: Callable[[Run], Run | None], *args: Any, **kwargs: Any) -> Any:
        return self._store.update(self._child(run_id), change, *args, **kwargs)

    def run_ids(self) -> Iterator[str]:
        for run_id in self._store.run_ids():
            try:
                if self._store.read(run_id).parent == self.parent:
                    yield run_id
            except (RunNotFound, StoreRefused):
                continue
            except Exception:  # noqa: BLE001 - an unreadable record is nobody's child here
                continue

    def remove(self, run_id: str) -> None:
        self._store.remove(self._child(run_id))

    def sweep(self) -> None:
        return None  # the store's upkeep is its owner's, not a run's work's

    # -- RunFiles ---------------------------------------------------------------------------------

    def write_text(self, run_id: str, name: str, text: str) -> None:
        self._store.write_text(self._made_here(run_id), name, text)

    def read_text(self, run_id: str, name: str) -> str:
        text: str = self._store.read_text(self._child(run_id), name)
        return text

    def work_artifacts_dir(self, run_id: str) -> str:
        where: str = self._store.work_artifacts_dir(self._child(run_id))
        return where

    def seal_artifacts(self, run_id: str) -> None:
        self._store.seal_artifacts(self._child(run_id))

    def console_sink(self, run_id: str) -> AbstractContextManager[Held]:
        sink: AbstractContextManager[Held] = self._store.console_sink(self._made_here(run_id))
        return sink

    def li_log_sink(self, run_id: str) -> AbstractContextManager[Held]:
        sink: AbstractContextManager[Held] = self._store.li_log_sink(self._made_here(run_id))
        return sink

    def li_log_bytes(self, run_id: str, offset: int, limit: int) -> tuple[bytes, int]:
        read: tuple[bytes, int] = self._store.li_log_bytes(self._child(run_id), offset, limit)
        return read

    def li_log(self, run_id: str, tail_chars: int) -> ConsoleAvailability:
        tail: ConsoleAvailability = self._store.li_log(self._child(run_id), tail_chars)
        return tail

    def forward_console(self, run_id: str) -> AbstractContextManager[None]:
        forwarding: AbstractContextManager[None] = self._store.forward_console(self._child(run_id))
        return forwarding

    def console_location(self, run_id: str) -> str:
        where: str = self._store.console_location(self._made_here(run_id))
        return where

    def console_bytes(self, run_id: str, offset: int, limit: int) -> tuple[bytes, int]:
        read: tuple[bytes, int] = self._store.console_bytes(self._child(run_id), offset, limit)
        return read

    def console(self, run_id: str, tail_chars: int) -> ConsoleAvailability:
        tail: ConsoleAvailability = self._store.console(self._child(run_id), tail_chars)
        return tail

    def artifacts(self, run_id: str) -> Availability[list[dict[str, Any]]]:
        found: Availability[list[dict[str, Any]]] = self._store.artifacts(self._child(run_id))
        return found

    def manifest(self, run_id: str) -> Availability[dict[str, Any]]:
        found: Availability[dict[str, Any]] = self._store.manifest(self._child(run_id))
        return found

    def artifact_bytes(self, run_id: str, name: str, limit: int) -> bytes:
        body: bytes = self._store.artifact_bytes(self._child(run_id), name, limit)
        return body

    def describe(self) -> tuple[str, str]:
        described: tuple[str, str] = self._store.describe()
        return described

    def init_schema(self) -> int | None:
        raise StoreRefused("a run's work cannot set up the store")

    def health(self) -> list[str]:
        found: list[str] = self._store.health()
        return found

    def import_run(self, run: Run, files: Mapping[str, str], console: Iterable[bytes] | None,
                   *args: Any, **kwargs: Any) -> bool:  # noqa: ARG002 - refused whatever it carries
        raise StoreRefused("a run's work cannot import runs into the store")

    def __getattr__(self, name: str) -> Any:
        # What a store has beyond the two ports: those that take a run take a child only; the
        # rest (a wait on changes, the store's place) are the store's own, as the caller finds them.
        if name.startswith("_"):
            raise AttributeError(name)
        found = getattr(self._store, name)
        if name in RUN_FIRST:
            return lambda run_id, *args, **kwargs: found(self._made_here(run_id), *args, **kwargs)
        return found


# The stores' methods beyond the ports whose first argument is a run id (adapters/fs_store.py,
# adapters/pg_store.py).
RUN_FIRST = frozenset({"run_dir", "watch_folder", "host_of", "append_console", "artifact_body"})
