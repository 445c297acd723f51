"""Shapes of status-bearing answers, built from one derivation so every verb says the same thing."""

from __future__ import annotations

from typing import Any

from application.observe import Observed


def lifecycle_fields(observed: Observed) -> dict[str, Any]:
    """status, terminal and outcome travel together on every status-bearing response (D4)."""
    run, d = observed.run, observed.derivation
    return {
        "run_id": run.run_id,
        "kind": run.kind,
        "label": run.label,
        "status": d.status,
        "terminal": d.terminal,
        "outcome": d.outcome,
        "reason_code": d.reason_code,
        "possibly_orphaned": d.possibly_orphaned,
        "spawn_state": run.spawn_state,
        "submitted_at": run.submitted_at,
    }
