"""`li usage`: what the ended runs spent, from each run's manifest, grouped."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from lionrun.application.ports import RunFiles, RunNotFound, RunRecords, StoreRefused
from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.domain.run import RecordUnusable, iso, submitted_second
from lionrun.domain.usage import Spent, meter_of, tally


class UsageService:
    """Totals the meters the ended runs recorded; a run that reported nothing is unreported."""

    def __init__(self, store: RunRecords, files: RunFiles) -> None:
        self.store = store
        self.files = files

    def usage(self, since: datetime | None, by: str | None) -> dict[str, Any]:
        spent: list[Spent] = []
        not_ended = unreadable = 0
        for run_id in self._run_ids():
            second = submitted_second(run_id)
            if since is not None and second is not None and second < since.replace(microsecond=0):
                continue
            try:
                run = self.store.read(run_id)
            except RunNotFound:
                continue  # a reservation, or removed meanwhile
            except (RecordUnusable, StoreRefused, OSError):
                unreadable += 1
                continue
            if not run.end_recorded:
                not_ended += 1
                continue
            manifest = self.files.manifest(run_id)
            metering = manifest.value.get("metering") if manifest.available and isinstance(manifest.value, dict) \
                else None
            wall, tokens, cost = meter_of(metering)
            spent.append(Spent(run_id=run_id, model=run.model if isinstance(run.model, str) else None,
                               label=run.label, queue=run.queue, wall_seconds=wall, tokens=tokens, cost_usd=cost))
        groups, total = tally(spent, by)
        return {"since": None if since is None else iso(since), "by": by,
                "groups": [g.to_wire() for g in groups], "total": total.to_wire(),
                "not_ended": not_ended, "unreadable": unreadable}

    def _run_ids(self) -> list[str]:
        try:
            return list(self.store.run_ids())
        except StoreRefused as exc:
            raise ContractError(ErrorKind.UNAVAILABLE, str(exc), {"reason_code": "store_unreadable"}) from exc
