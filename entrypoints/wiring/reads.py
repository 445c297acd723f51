"""The read side: one Observer under status, output, list, wait and kill (and the reap it may do)."""

from __future__ import annotations

from typing import Any

from application.kill import Killer
from application.observe import Observer
from application.reads import RunReads
from entrypoints._di import containers, providers


def follow_loop(**kwargs: Any) -> Any:
    """The follow loop (application.follow), imported when first used: `li agent` in the
    foreground and `li job output --follow` follow, no other read does (start-up, issue 18)."""
    from application.follow import Follower

    return Follower(**kwargs)


class Reads(containers.DeclarativeContainer):
    config = providers.Configuration()
    core = providers.DependenciesContainer()
    # What a reap winner calls (D9); the top container hands in the notices side, built on first use.
    on_reaped: providers.Dependency[Any] = providers.Dependency(default=None)

    observer = providers.Factory(
        Observer, store=core.store, prober=core.prober, clock=core.clock, on_reaped=on_reaped,
        preparing_threshold=config.preparing_threshold, cluster=core.cluster.provider,
    )
    reads = providers.Factory(RunReads, store=core.store, observer=observer, files=core.store)
    killer = providers.Factory(
        Killer, store=core.store, observer=observer, signaller=core.signaller, clock=core.clock,
        grace=config.kill_grace, cluster=core.cluster.provider,
    )
    # The one follow loop (`li agent` in the foreground, `li job output --follow`), over the same Observer.
    follower = providers.Factory(follow_loop, files=core.store, observer=observer, clock=core.clock)
