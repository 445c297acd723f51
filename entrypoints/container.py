"""The one composition root: the sides' containers composed, configured from the environment.

Each side is a container in its own module under `entrypoints/wiring/` (dependency-injector's
multiple-containers layout), all composed with `providers.Container`. The waits, submit, notices and
upkeep sides build their services through typed functions that import the service's module when
first called, so `li job status` loads the read side's classes and nothing else.

An outside test swaps one adapter in one line, e.g.
`container.core.store.override(providers.Object(MemoryRunStore()))`.
"""

from __future__ import annotations

from lionrun.entrypoints.settings import DEFAULTS, from_environment
from lionrun.entrypoints.startup.di_import import containers, providers
from lionrun.entrypoints.wiring.core import Core
from lionrun.entrypoints.wiring.notices import NoticesSide
from lionrun.entrypoints.wiring.reads import Reads
from lionrun.entrypoints.wiring.submit import SubmitSide
from lionrun.entrypoints.wiring.upkeep import Upkeep
from lionrun.entrypoints.wiring.waits import Waits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from lionrun.application.ports import GitWorktrees
    from lionrun.domain.run import Run


def on_first_use(notices: Callable[[], NoticesSide], store: Any = None,
                 git: Callable[[], GitWorktrees] | None = None) -> Callable[[Run], None]:
    """The reap hook: the notices are built only when a reap actually publishes.

    Every status, list and wait composes an Observer; almost none of them reap. A reaped run
    that worked in its own worktree (issue 28) first has what its work left there committed, by
    the reaper, as its runner would have (never raising: the worktree keeps it otherwise).
    """

    def send(run: Run) -> None:
        uncommitted = (run.worktree is not None and run.changes is None) or any(
            entry.changes is None for entry in run.leg_worktrees or [])
        if uncommitted and store is not None and git is not None:
            commit_reaped(run, store, git)
        notices().reap_notices().send(run)

    return send


def restart_on_first_use(submitter: Callable[[], Any], store: Any, clock: Any) -> Callable[[Run], Run | None]:
    """The restart hook (issue 43): the submit side is built only when a waiting run's runner is
    found gone, which almost no read meets."""

    def restart(run: Run) -> Run | None:
        from lionrun.application.dependencies import Restarter

        return Restarter(store, submitter().relaunch, clock).restart(run)

    return restart


def commit_reaped(run: Run, store: Any, git: Callable[[], GitWorktrees]) -> None:
    """What the run's work left in its worktree (or in each leg's) committed, as its runner would have."""
    from contextlib import suppress

    from lionrun.application.worktrees import WorktreeReviews

    reviews = WorktreeReviews(store, store, git)
    with suppress(Exception):  # `li job diff` recovers them later; the reap is already published
        if run.worktree is not None:
            reviews.recover(run)
        else:
            reviews.recover_legs(run)


def composition() -> Any:
    """A new composition root: a DeclarativeContainer class of its own, its providers new.

    A process uses the class it gets as its container, as dependency-injector allows (a class's
    providers are callable and overridable): instantiating a DeclarativeContainer deep-copies
    every provider, and these are all linked through `config` and the sides, so the copy costs a
    read about half an interpreter floor (entrypoints/startup/README.md). A new class per
    `get_container()` after `set_container(None)` keeps what one user overrode away from the next.
    `Container` (below) is one such class made on first use, for tests that instantiate it.
    """

    class Container(containers.DeclarativeContainer):
        config = providers.Configuration(default=dict(DEFAULTS))

        core = providers.Container(Core, config=config)
        notices = providers.Container(NoticesSide, config=config, core=core)
        submit = providers.Container(SubmitSide, config=config, core=core)
        reads = providers.Container(
            Reads, config=config, core=core,
            on_reaped=providers.Callable(on_first_use, notices.provider, core.store, core.git.provider),
            restart=providers.Callable(restart_on_first_use, submit.submitter.provider, core.store, core.clock),
        )
        waits = providers.Container(Waits, core=core, reads=reads)
        upkeep = providers.Container(Upkeep, core=core, reads=reads)

    return Container


def __getattr__(name: str) -> Any:
    """`Container`, the composition root's class, made on first use (PEP 562): a process that
    only calls `get_container()` never makes it."""
    if name == "Container":
        made = composition()
        globals()["Container"] = made
        return made
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_container: Any = None


def get_container() -> Any:
    """The process-wide container, configured from the environment on first use: a composition
    class of its own (`composition`), used without an instance's copy."""
    global _container
    if _container is None:
        built = composition()
        built.config.from_dict(from_environment())
        _container = built
    return _container


def set_container(container: Any) -> None:
    """Install a container (tests), or drop it so the next use builds a fresh one."""
    global _container
    _container = container
