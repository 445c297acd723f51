"""Cells and lines several verbs show a person: a run's legs, a run's changes."""

from __future__ import annotations

from typing import Any


def legs_of(manifest: dict[str, Any], kind: str | None) -> list[tuple[str, str, str, str]]:
    """A flow's or fanout's legs as the manifest recorded them: (id, model, status, how it ended)."""
    value = manifest.get("value") if manifest.get("available") else None
    legs = value.get("legs") if isinstance(value, dict) else None
    if kind == "agent" or not isinstance(legs, list):
        return []
    from lionrun.domain.run import printable

    found = []
    for leg in legs[:64]:
        if not isinstance(leg, dict):
            continue
        code = leg.get("exit_code")
        said = leg.get("reason_code")
        reason = f"({said})" if isinstance(said, str) and said != leg.get("status") else ""  # not `cancelled (cancelled)`
        exit_text = ""
        if isinstance(code, int) and not isinstance(code, bool) and code:
            exit_text = f"exit code {code}" if code > 0 else f"stopped by signal {-code}"
        found.append(tuple(printable(str(leg.get(key) or "-")) for key in ("id", "model", "status"))
                     + (printable(" ".join(filter(None, (reason, exit_text)))),))
    return found  # type: ignore[return-value]


def changes_cell(changes: dict[str, Any] | None, legs: list[dict[str, Any]] | None = None) -> str:
    """`+12 −3, 2 files` (domain.worktree.changes_column) from a row's wire `changes`; for a run of
    several legs, each in its own worktree, the legs' changes summed (`legs_changes_column`)."""
    from lionrun.domain.worktree import Changes, changes_column, legs_changes_column

    try:
        if isinstance(changes, dict):
            return changes_column(Changes.from_dict(changes))
        if isinstance(legs, list) and legs:
            return legs_changes_column([Changes.from_dict(leg["changes"]) if leg.get("changes") else None
                                        for leg in legs])
    except (TypeError, AttributeError):
        return "?"
    return ""
