"""Doctor and prune: what checks the installation and what removes ended runs, each imported
when first built (only `li doctor` and `li job prune`)."""

from __future__ import annotations

from entrypoints._di import containers, providers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from adapters.diagnostics import SystemDiagnostics
    from application.observe import Observer
    from application.ports import Clock
    from application.prune import Pruner
    from application.worktrees import WorktreeReviews


def diagnostics(home: str) -> SystemDiagnostics:
    from adapters.diagnostics import SystemDiagnostics

    return SystemDiagnostics(home=home)


def pruner(store: Any, observer: Observer, clock: Clock, git: Any = None) -> Pruner:
    """Prune and rm; a run's worktree (issue 28) is removed with it through git, built on first use."""
    from application.prune import Pruner

    def worktrees(run: Any, branches: bool) -> str | None:
        from application.worktrees import RunWorktrees

        return RunWorktrees(git(), store, store).remove(run, branches)

    return Pruner(store=store, observer=observer, clock=clock, worktrees=worktrees if git is not None else None)


def worktree_reviews(store: Any, git: Any, reads: Any) -> WorktreeReviews:
    """`li job diff` and `li job apply` (issue 28), imported when first used; a run is observed
    (not_found, unusable, terminal) as every read observes it."""
    from application.worktrees import WorktreeReviews

    def observe(run_id: str) -> tuple[Any, bool]:
        observed = reads.observe(run_id)
        return observed.run, observed.derivation.terminal

    return WorktreeReviews(store, store, git, observe)


class Upkeep(containers.DeclarativeContainer):
    core = providers.DependenciesContainer()
    reads = providers.DependenciesContainer()

    diagnostics = providers.Singleton(diagnostics, home=core.home)
    pruner = providers.Factory(pruner, store=core.store, observer=reads.observer, clock=core.clock,
                               git=core.git.provider)
    reviews = providers.Factory(worktree_reviews, store=core.store, git=core.git.provider, reads=reads.reads)
