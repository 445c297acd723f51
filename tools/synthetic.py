"""Synthetic stores: finished (or other) run records written directly, for benchmarks and tests."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from typing import Any

from lionrun.domain.run import Run, iso, make_run_id


def write_run(home: str, run_id: str, **fields: Any) -> str:
    """Write `runs/<run_id>/record.json` (and an empty console.log); returns the run folder."""
    folder = os.path.join(home, "runs", run_id)
    os.makedirs(os.path.join(folder, "artifacts"), exist_ok=True)
    base: dict[str, Any] = {"run_id": run_id, "kind": "agent", "status": "completed",
                            "submitted_at": iso(datetime.now(UTC)), "spawn_state": "started",
                            "generation": 3}
    base.update(fields)
    record = Run(**base).to_dict()
    with open(os.path.join(folder, "record.json"), "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=1, sort_keys=True)
    with open(os.path.join(folder, "console.log"), "a", encoding="utf-8"):
        pass
    return folder


def finished_runs(home: str, count: int, start: datetime | None = None) -> list[str]:
    """`count` completed runs with distinct, time-ordered ids; returns the ids oldest first."""
    start = start or datetime(2026, 1, 1, tzinfo=UTC)
    ids = []
    for n in range(count):
        moment = start + timedelta(seconds=n)
        run_id = make_run_id(moment, f"{n % 0xFFFFFF:06x}")
        write_run(home, run_id, submitted_at=iso(moment), started_at=iso(moment),
                  finished_at=iso(moment + timedelta(seconds=1)), outcome="succeeded",
                  reason_code=None, exit_code=0, pid=1_000_000 + n)
        ids.append(run_id)
    return ids
