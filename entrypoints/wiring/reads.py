"""The read side: one Observer under status, output, list, wait and kill (and the reap it may do)."""

from __future__ import annotations

from lionrun.application.kill import Killer
from lionrun.application.observe import Observer
from lionrun.application.reads import RunReads
from lionrun.entrypoints.startup.di_import import containers, providers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from lionrun.application.follow import Follower
    from lionrun.application.ports import Clock, RunFiles
    from lionrun.domain.run import Run


def follow_loop(files: RunFiles, observer: Observer, clock: Clock, poll_seconds: float | None = None) -> Follower:
    """The follow loop (application.follow), imported when first used: `li agent` in the
    foreground and `li job output --follow` follow, no other read does."""
    from lionrun.application.follow import Follower

    if poll_seconds is None:
        return Follower(files=files, observer=observer, clock=clock)
    return Follower(files=files, observer=observer, clock=clock, poll_seconds=poll_seconds)


class Reads(containers.DeclarativeContainer):
    config = providers.Configuration()
    core = providers.DependenciesContainer()
    # What a reap winner calls (D9); the top container hands in the notices side, built on first use.
    on_reaped: providers.Dependency[Callable[[Run], None] | None] = providers.Dependency(default=None)
    # Issue 43: what starts a new runner for a waiting run whose runner is gone (built on first use).
    restart: providers.Dependency[Callable[[Run], Run | None] | None] = providers.Dependency(default=None)

    observer = providers.Factory(
        Observer, store=core.store, prober=core.prober, clock=core.clock, on_reaped=on_reaped,
        preparing_threshold=config.preparing_threshold, cluster=core.cluster.provider, restart=restart,
    )
    reads = providers.Factory(RunReads, store=core.store, observer=observer, files=core.store,
                              queues=core.queues.provider)
    killer = providers.Factory(
        Killer, store=core.store, observer=observer, signaller=core.signaller, clock=core.clock,
        grace=config.kill_grace, cluster=core.cluster.provider,
    )
    # The one follow loop (`li agent` in the foreground, `li job output --follow`), over the same Observer.
    follower = providers.Factory(follow_loop, files=core.store, observer=observer, clock=core.clock)
