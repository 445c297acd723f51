"""Doctor and prune: what checks the installation and what removes ended runs, each imported
when first built (only `li doctor` and `li job prune`)."""

from __future__ import annotations

from lionrun.entrypoints.startup.di_import import containers, providers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from lionrun.adapters.diagnostics import SystemDiagnostics
    from lionrun.adapters.faults import PausingStore
    from lionrun.adapters.fs_store import FsRunStore
    from lionrun.adapters.pg_store import PgRunStore
    from lionrun.application.observe import Observer
    from lionrun.application.ports import Clock, GitWorktrees
    from lionrun.application.prune import Pruner
    from lionrun.application.reads import RunReads
    from lionrun.application.worktrees import WorktreeReviews
    from lionrun.domain.config import Settings
    from lionrun.domain.run import Run

    Store = FsRunStore | PausingStore | PgRunStore  # the core's store, as `entrypoints.services` names it


def diagnostics(home: str, settings: Settings) -> SystemDiagnostics:
    from lionrun.adapters.diagnostics import SystemDiagnostics

    return SystemDiagnostics(home=home, config=settings.file)  # config.toml as the process read it


def pruner(store: Store, observer: Observer, clock: Clock,
           git: Callable[[], GitWorktrees] | None = None) -> Pruner:
    """Prune and rm; a run's worktree (issue 28) is removed with it through git, built on first use."""
    from lionrun.application.prune import Pruner

    if git is None:
        return Pruner(store=store, observer=observer, clock=clock)
    built_git = git

    def worktrees(run: Run, branches: bool) -> str | None:
        from lionrun.application.worktrees import RunWorktrees

        return RunWorktrees(built_git(), store, store).remove(run, branches)

    return Pruner(store=store, observer=observer, clock=clock, worktrees=worktrees)


def worktree_reviews(store: Store, git: Callable[[], GitWorktrees], reads: RunReads) -> WorktreeReviews:
    """`li job diff` and `li job apply` (issue 28), imported when first used; a run is observed
    (not_found, unusable, terminal) as every read observes it."""
    from lionrun.application.worktrees import WorktreeReviews

    def observe(run_id: str) -> tuple[Run, bool]:
        observed = reads.observe(run_id)
        return observed.run, observed.derivation.terminal

    return WorktreeReviews(store, store, git, observe)


class Upkeep(containers.DeclarativeContainer):
    core = providers.DependenciesContainer()
    reads = providers.DependenciesContainer()

    diagnostics = providers.Singleton(diagnostics, home=core.home, settings=core.settings)
    pruner = providers.Factory(pruner, store=core.store, observer=reads.observer, clock=core.clock,
                               git=core.git.provider)
    reviews = providers.Factory(worktree_reviews, store=core.store, git=core.git.provider, reads=reads.reads)
