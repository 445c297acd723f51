"""What a run's end is built from: `manifest.json`, its metering, whether the work produced output, the vendor's facts."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from lionrun.application.orchestrate import LegOutcome
from lionrun.application.work.parts import ArtifactNames
from lionrun.domain.availability import Availability
from lionrun.domain.ending import EXIT_DECIDES, End
from lionrun.domain.request import RunRequest
from lionrun.domain.run import iso
from lionrun.domain.transcript import PROVIDER_RATE_LIMITED


def produced(artifacts: ArtifactNames, outcomes: list[LegOutcome]) -> bool | None:
    """Whether the work left output: None when its artifacts could not be collected. A shell leg
    that completed (exit 0) is output enough: for shell work the exit status is the answer."""
    if not artifacts.available:
        return None
    return (bool(artifacts.value) or any(o.artifact for o in outcomes)
            or any(o.status == "completed" and o.leg.model.provider in EXIT_DECIDES for o in outcomes))


def build_manifest(run_id: str, request: RunRequest | None, outcomes: list[LegOutcome],
                   wall: float, artifacts: ArtifactNames | None = None) -> dict[str, Any]:
    """`manifest.json`: each leg, the artifacts collected and the run's metering (D7 shapes).

    `artifacts` is the regular files found under artifacts/ at the end, or `available: false`
    with why they could not be collected; absent when the caller collected none.
    """
    manifest: dict[str, Any] = {
        "schema_version": 1,
        "run_id": run_id,
        "kind": request.kind if request is not None else None,
        "legs": [_leg_entry(o) for o in outcomes],
        "metering": meter(outcomes, wall),
    }
    if artifacts is not None:
        manifest["artifacts"] = artifacts.to_wire()
    return manifest


def _leg_entry(outcome: LegOutcome) -> dict[str, Any]:
    result = outcome.result
    return {
        "id": outcome.leg.id, "model": outcome.leg.model.text, "provider": outcome.leg.model.provider,
        "depends_on": list(outcome.leg.depends_on), "status": outcome.status,
        "reason_code": outcome.reason_code, "artifact": outcome.artifact and f"artifacts/{outcome.artifact}",
        "artifact_error": outcome.artifact_error,
        "exit_code": result.exit_code if result else None, "is_error": result.is_error if result else None,
        "timed_out": result.timed_out if result else None, "wall_seconds": round(outcome.wall_seconds, 3),
        "usage": dict(result.usage) if result else {},
        "session_id": result.session_id if result else None,
    }


def meter(outcomes: list[LegOutcome], wall: float) -> dict[str, Any]:
    """Wall seconds always; tokens and cost only when every leg that ran reported them.

    Tokens are input and output, plus every other token class (cached input, cache writes,
    reasoning, thoughts, total, …) that each leg's CLI reported, so none is dropped.
    """
    ran = [o for o in outcomes if o.result is not None]
    tokens = _total(ran, ("input_tokens", "output_tokens", *_token_classes(ran)))
    cost = _total(ran, ("cost_usd",))
    return {
        "wall_seconds": round(wall, 3),
        "tokens": tokens.to_wire(),
        "cost_usd": Availability(available=cost.available,
                                 value=None if cost.value is None else cost.value["cost_usd"],
                                 reason_code=cost.reason_code, detail=cost.detail).to_wire(),
    }


def _token_classes(ran: list[LegOutcome]) -> tuple[str, ...]:
    """The token classes beyond input and output that every leg that ran reported as a number."""
    reported = [{k for k, v in o.result.usage.items() if k.endswith("_tokens") and isinstance(v, int | float)
                 and not isinstance(v, bool)} for o in ran if o.result is not None]
    common = set.intersection(*reported) if reported else set()
    return tuple(sorted(common - {"input_tokens", "output_tokens"}))


def _total(ran: list[LegOutcome], keys: tuple[str, ...]) -> Availability[dict[str, Any]]:
    if not ran:
        return Availability.unavailable("not_reported", "no leg ran")
    silent = [o.leg.id for o in ran if o.result is None or any(
        not isinstance(o.result.usage.get(k), int | float) for k in keys)]
    if silent:
        return Availability.unavailable("not_reported", f"not reported by: {', '.join(silent)}")
    totals = {k: sum(o.result.usage[k] for o in ran if o.result is not None) for k in keys}
    return Availability.of(totals)



def vendor_facts(end: End, outcomes: list[LegOutcome], now: Callable[[], datetime]) -> dict[str, str | None]:
    """What the agent CLI's stream told of the run: its session id (a run of one leg; a
    multi-leg run's manifest entries carry theirs) and, for a rate-limited end, when the
    vendor said the limit resets."""
    results = [o.result for o in outcomes if o.result is not None]
    session = results[0].session_id if len(outcomes) == 1 and results else None
    retry_at = _retry_at(outcomes, now) if end.reason_code == PROVIDER_RATE_LIMITED else None
    return {"session_id": session, "retry_at": retry_at}


def _retry_at(outcomes: list[LegOutcome], now: Callable[[], datetime]) -> str | None:
    """When the vendor said its rate limit resets: its own moment, else its delay counted from now."""
    limited = next((o.result for o in outcomes if o.reason_code == PROVIDER_RATE_LIMITED
                    and o.result is not None), None)
    if limited is None:
        return None
    if limited.retry_at is not None:
        return limited.retry_at
    if limited.retry_after is not None:
        return iso(now() + timedelta(seconds=limited.retry_after))
    return None
