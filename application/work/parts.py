"""The shapes the parts of a run's work share: where it happens, what a lean supervisor gets and gives back."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from lionrun.application.ports import (
    LaunchableProvider,
    LegLaunch,
)
from lionrun.domain.availability import Availability
from lionrun.domain.request import AGENT_PROVIDERS, Leg, RunRequest
from lionrun.domain.run import Run

AfterEnd = Callable[[Run], None]

# How often a runner looks at its record for a kill request while the work runs (seconds); the
# request reaches the work within this plus the legs' stop.
KILL_WATCH_SECONDS = 0.5
KILL_SEEN = "li runner: a kill request is recorded; stopping the work\n"  # said by the lean supervisor too
ArtifactNames = Availability[list[str]]

# Why the artifacts of a run could not be collected, beside the D7 reason codes of a listing.
UNWRITABLE = "unwritable"  # an answer a leg gave could not be written under artifacts/


def leg_environment(env: Mapping[str, str], leg: Leg, cwd: str) -> dict[str, str]:
    """What a leg's process starts with: the run's environment, its leg id, and `PWD` naming the
    folder it starts in, so a CLI that trusts `$PWD` over `getcwd()` (OpenCode does) works where li
    started it, never in the folder an inherited `PWD` names."""
    return {**env, "LI_LEG_ID": leg.id, "PWD": cwd}


def no_hook(run: Run) -> None:
    """The default after-end hook: nothing to deliver."""


@dataclass(frozen=True)
class LeanHandover:
    """A one-leg run handed to a lean supervisor: the leg's process to start (in `cwd`, with
    `env`), how long it may take, and how often to look for a recorded kill request."""

    run_id: str
    launch: LegLaunch
    cwd: str
    env: Mapping[str, str]
    timeout: float | None
    began: float  # the clock's monotonic reading when the runner began (the manifest's wall)
    kill_watch: float | None
    idle_timeout: float | None = None  # an agent leg's idle watchdog; None for shell work
    confine: Mapping[str, str] | None = None  # how the supervisor confines the leg



class ConfinementRefused(Exception):
    """`--confine required` and the kernel would not hide the store: the work is not started."""



CONFINEMENT_REFUSED = "confinement_refused"  # the end's reason then


@dataclass(frozen=True)
class SupervisedEnd:
    """What the lean supervisor saw of the leg: its stdout lines, its exit (None when it was
    stopped before it started), whether its timeout or a cancel stopped it, and when it began."""

    lines: Sequence[str]
    exit_code: int | None
    timed_out: bool
    cancelled: bool
    began: float
    leg_began: float
    idle: bool = False  # the idle watchdog stopped it (then `timed_out` too)



def launchable(provider: object) -> TypeGuard[LaunchableProvider]:
    return callable(getattr(provider, "launch", None)) and callable(getattr(provider, "conclude", None))



@dataclass(frozen=True)
class Workspace:
    """Where the work happens: the console stream (the work's bytes only), the li log stream (li's
    own lines, kept apart so the console is exactly what the work wrote) and the legs' environment."""

    console: Any
    env: Mapping[str, str]
    li_log: Any



def lean_allows(request: RunRequest) -> bool:
    """Whether a lean supervisor (which reads nothing of the leg's stream while it runs) can watch
    this run: not one with a budget, which is counted from the stream as it arrives."""
    return request.budget is None and request.retry is None



def idle_timeout_of(request: RunRequest, leg: Leg) -> float | None:
    """The idle watchdog of one leg: the request's, for an agent CLI's leg only."""
    return request.idle_timeout if leg.model.provider in AGENT_PROVIDERS else None



def failure_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
