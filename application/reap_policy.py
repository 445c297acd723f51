"""What a reap does once it has published (D9): the policy, wired by the
composition root with the services it needs, each built only when a reap actually needs it.

Every status, list and wait composes an Observer; almost none of them reap, and almost none meet a
waiting run whose runner is gone. So the hooks take builders (`Callable[[], ...]`), not services.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from lionrun.application.ports import Clock, GitWorktrees
    from lionrun.domain.run import Run


def reap_hook(reap_notices: Callable[[], Any], store: Any = None,
              git: Callable[[], GitWorktrees] | None = None) -> Callable[[Run], None]:
    """The reap hook: the terminal notice handed to a detached sender (the notices are built only
    when a reap publishes). A reaped run that worked in its own worktree first has what
    its work left there committed, as its runner would have (never raising: the worktree keeps it
    otherwise)."""

    def send(run: Run) -> None:
        uncommitted = (run.worktree is not None and run.changes is None) or any(
            entry.changes is None for entry in run.leg_worktrees or [])
        if uncommitted and store is not None and git is not None:
            commit_reaped(run, store, git)
        reap_notices().send(run)

    return send


def restart_hook(submitter: Callable[[], Any], store: Any, clock: Clock) -> Callable[[Run], Run | None]:
    """The restart hook: the submit service, which relaunches a runner, is built only
    when a waiting run's runner is found gone, which almost no read meets."""

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
