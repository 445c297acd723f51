"""What a run does inside its detached child: prepare (confinement, worktree), execute (the legs),
conclude (artifacts, manifest, the end). `WorkService` joins the three parts; the names others
import are kept here."""

from lionrun.application.work.budget import BudgetWatch
from lionrun.application.work.manifest import build_manifest, meter, produced
from lionrun.application.work.parts import (
    CONFINEMENT_REFUSED,
    KILL_SEEN,
    KILL_WATCH_SECONDS,
    UNWRITABLE,
    AfterEnd,
    ArtifactNames,
    ConfinementRefused,
    LeanHandover,
    SupervisedEnd,
    Workspace,
    idle_timeout_of,
    lean_allows,
)
from lionrun.application.work.service import WorkService

__all__ = [
    "CONFINEMENT_REFUSED", "KILL_SEEN", "KILL_WATCH_SECONDS", "UNWRITABLE", "AfterEnd", "ArtifactNames",
    "BudgetWatch", "ConfinementRefused", "LeanHandover", "SupervisedEnd", "WorkService", "Workspace",
    "build_manifest", "idle_timeout_of", "lean_allows", "meter", "produced",
]
