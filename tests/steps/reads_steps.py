"""Steps for the D4/D6/D7 reads features, and helpers that lay runs down without the submit verb."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
from datetime import timedelta
from typing import Any

from domain.run import Delivery, Incarnation, Run, iso

# --- helpers shared with the unit, integration and e2e tests of issue 4 ----------------------------


def put_run(store: Any, now: Any, **fields: Any) -> Run:
    """Reserve and create one run record (a started, running agent unless told otherwise)."""
    run_id = store.reserve(now)
    values: dict[str, Any] = {"kind": "agent", "status": "running", "submitted_at": iso(now),
                              "spawn_state": "started"}
    values.update(fields)
    return store.create(Run(run_id=run_id, **values))


def end(store: Any, run_id: str, status: str, outcome: str | None, reason: str | None = None,
        now: Any = None) -> Run:
    """Record an end the way the runner does: under the lock, with finished_at."""
    from datetime import UTC, datetime

    moment = iso(now or datetime.now(UTC))
    done = store.update(run_id, lambda r: r.evolve(status=status, outcome=outcome, reason_code=reason,
                                                   finished_at=moment))
    assert done is not None
    return done


def scripted_incarnation(prober: Any, pid: int, create_time: float = 1000.0) -> Incarnation:
    """The incarnation a scripted prober would have recorded at spawn (its host, its boot)."""
    return Incarnation(prober.facts.host_id, prober.facts.boot_id, pid, create_time, pid)


def corrupt(world: Any, run_id: str, raw: str = "{not json") -> None:
    """Replace a record with bytes that are not a record."""
    if world.kind == "memory":
        world.store.put_raw(run_id, raw)
    else:
        with open(os.path.join(world.store.run_dir(run_id), "record.json"), "w", encoding="utf-8") as handle:
            handle.write(raw)


def raw_record(world: Any, run_id: str) -> str:
    if world.kind == "memory":
        return str(world.store._records[run_id])
    with open(os.path.join(world.store.run_dir(run_id), "record.json"), encoding="utf-8") as handle:
        return handle.read()


class Sleeper:
    """A real detached process (own session and group), reaped by a thread so it never lingers as a zombie."""

    def __init__(self, argv: list[str] | None = None, seconds: int = 120) -> None:
        self.proc = subprocess.Popen(argv or ["sleep", str(seconds)], start_new_session=True,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        self.pid = self.proc.pid
        self._reaper = threading.Thread(target=self.proc.wait, daemon=True)
        self._reaper.start()

    def incarnation(self, create_time_shift: float = 0.0) -> Incarnation:
        import psutil

        from adapters.processes import host_facts

        here = host_facts()
        created = psutil.Process(self.pid).create_time() + create_time_shift
        return Incarnation(here.host_id, here.boot_id, self.pid, created, os.getpgid(self.pid))

    def kill_group(self, signum: int = signal.SIGKILL) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signum)

    def gone(self, timeout: float = 10.0) -> int:
        """Wait for the reaper; the process's return code (negative for a signal)."""
        self._reaper.join(timeout)
        code = self.proc.returncode
        assert code is not None, "the process is still running"
        return code

    def stop(self) -> None:
        self.kill_group()
        self._reaper.join(10)


def write_file(store: Any, run_id: str, name: str, text: str) -> None:
    """A run file (console, manifest) as the runner would leave it, on either store."""
    if hasattr(store, "append_console") and name == "console.log":
        store.append_console(run_id, text)
    else:
        store.write_text(run_id, name, text)


def manifest_with(store: Any, run_id: str, manifest: dict[str, Any]) -> None:
    write_file(store, run_id, "manifest.json", json.dumps(manifest))


def delivered(ok: bool | None, failure_class: str | None = None) -> Delivery:
    return Delivery(attempted=True, ok=ok, exit_code=None if ok is None else (0 if ok else 3),
                    failure_class=failure_class)


def later(now: Any, seconds: float) -> Any:
    return now + timedelta(seconds=seconds)
