"""The one place a verb gets a service from: each function builds it from the composition root.

Verbs import this module inside their handlers (never at module level), so `li handshake` and
`--help` load no container; a test swaps a service by overriding the container's provider.
"""

from __future__ import annotations

from lionrun.entrypoints.container import get_container

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from lionrun.adapters.diagnostics import SystemDiagnostics
    from lionrun.adapters.faults import PausingStore
    from lionrun.adapters.fs_store import FsRunStore
    from lionrun.adapters.pg_store import PgRunStore
    from lionrun.application.follow import Follower
    from lionrun.application.kill import Killer
    from lionrun.application.notify import Notices
    from lionrun.application.ports import Clock, Cluster, GitWorktrees, ProcessProber, RunQueues
    from lionrun.application.prune import Pruner
    from lionrun.application.reads import RunReads
    from lionrun.application.submit import SubmitService
    from lionrun.application.wait import Waiter
    from lionrun.application.work import AfterEnd, WorkService
    from lionrun.application.worktrees import WorktreeReviews
    from lionrun.domain.config import Settings

    Store = FsRunStore | PausingStore | PgRunStore


def container() -> Any:
    return get_container()


def reads() -> RunReads:
    built: RunReads = get_container().reads.reads()
    return built


def killer() -> Killer:
    built: Killer = get_container().reads.killer()
    return built


def follower(poll_seconds: float | None = None) -> Follower:
    built: Follower = get_container().reads.follower(poll_seconds=poll_seconds)
    return built


def waiter() -> Waiter:
    built: Waiter = get_container().waits.waiter()
    return built


def store() -> Store:
    built: Store = get_container().core.store()
    return built


def prober() -> ProcessProber:
    built: ProcessProber = get_container().core.prober()
    return built


def clock() -> Clock:
    built: Clock = get_container().core.clock()
    return built


def cluster() -> Cluster:
    built: Cluster = get_container().core.cluster()
    return built


def queues() -> RunQueues | None:
    """The store's queues (issue 29); None for a store that keeps none."""
    built: RunQueues | None = get_container().core.queues()
    return built


def home() -> str:
    """This host's store folder (LI_HOME or its default): where the store's own lock lives."""
    return str(get_container().core.home())


def store_setting() -> str:
    """The configured store (LI_STORE or config.toml); empty for the default filesystem store."""
    return str(get_container().config.store() or "")


def submitter() -> SubmitService:
    built: SubmitService = get_container().submit.submitter()
    return built


def work(after_end: AfterEnd | None = None) -> WorkService:
    built: WorkService = get_container().submit.work(after_end=after_end)
    return built


def notices() -> Notices:
    built: Notices = get_container().notices.notices()
    return built


def pruner() -> Pruner:
    built: Pruner = get_container().upkeep.pruner()
    return built


def diagnostics() -> SystemDiagnostics:
    built: SystemDiagnostics = get_container().upkeep.diagnostics()
    return built


def git() -> GitWorktrees:
    built: GitWorktrees = get_container().core.git()
    return built


def reviews() -> WorktreeReviews:
    built: WorktreeReviews = get_container().upkeep.reviews()
    return built


def sweep_spool() -> None:
    """After a li call on a shared store: move in what a run left in this host's spool once its
    runner was gone (issue 40 item 3). Costs one look at the spool folder when it is empty (the
    usual case); never changes the answer given, never raises."""
    from lionrun.entrypoints import container as composition_root

    if composition_root._container is None:
        return  # this call built no container (`li handshake`, `--help`): it touched no store
    try:
        built = get_container()
        if built.core.store_kind_now() != "postgresql":
            return
        import os

        folder = os.path.join(str(built.core.home()), "spool")
        if not os.path.isdir(folder) or not os.listdir(folder):
            return
        from lionrun.application.spool import SpoolSweep

        store = built.core.own_store()
        SpoolSweep(store, store, built.reads.observer(), built.core.clock()).sweep()
    except Exception:  # noqa: BLE001 - the next call tries again; this one has answered already
        return


def settings() -> Settings:
    """li's settings: config.toml as this process read it (once), with the environment's overrides."""
    built: Settings = get_container().core.settings()
    return built
