"""The core container: settings, clock, the run store and the process adapters every side shares."""

from __future__ import annotations

from lionrun.adapters.clocks import SystemClock
from lionrun.adapters.faults import PHASES, PausingStore
from lionrun.adapters.fs_store import FsRunStore
from lionrun.adapters.processes import DetachedSpawner, GroupSignaller, PsutilProber
from lionrun.entrypoints.settings import home_or_default, is_shared_store
from lionrun.entrypoints.startup.di_import import containers, providers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lionrun.adapters.fs_changes import FsRunChanges
    from lionrun.adapters.fs_queues import FsQueues
    from lionrun.adapters.git import Git
    from lionrun.adapters.pg_queues import PgQueues
    from lionrun.adapters.pg_store import PgRunChanges, PgRunStore
    from lionrun.adapters.slurm import SlurmCluster
    from lionrun.domain.config import Settings


def store_kind(fault_pause: str, store: str = "") -> str:
    """`pausing` only when the fault suite asked for one of its pause phases; `postgresql` for a
    `postgresql://` store (LI_STORE or config.toml); else `plain`, the filesystem store."""
    if fault_pause in PHASES:
        return "pausing"
    return "postgresql" if is_shared_store(store or "") else "plain"


def shared_store(dsn: str, home: str, connect_timeout: float, statement_timeout: float, outage: float) -> PgRunStore:
    """The PostgreSQL store, imported only when configured (every filesystem read skips the module)."""
    from lionrun.adapters.pg_store import PgRunStore

    return PgRunStore(dsn, spool(home), connect_timeout=connect_timeout, statement_timeout=statement_timeout,
                      outage=outage)


def shared_changes(dsn: str, connect_timeout: float) -> PgRunChanges:
    """LISTEN/NOTIFY wake-ups of the PostgreSQL store, imported only when configured."""
    from lionrun.adapters.pg_store import PgRunChanges

    return PgRunChanges(dsn, connect_timeout)


def local_changes(home: str) -> FsRunChanges:
    """inotify on the filesystem store's run folders, imported when first used: only `li job wait`
    watches, so a status or a list loads neither it nor select and struct."""
    from lionrun.adapters.fs_changes import FsRunChanges

    return FsRunChanges(home=home)


def local_queues(home: str) -> FsQueues:
    """Queues on the filesystem store (issue 29), imported when first used: a submit and a queued
    runner ask them; no read does."""
    from lionrun.adapters.fs_queues import FsQueues

    return FsQueues(home)


def shared_queues(store: PgRunStore) -> PgQueues:
    """Queues on the PostgreSQL store, in its tables; its session holds this process's places
    and slots (advisory locks), imported only when configured."""
    from lionrun.adapters.pg_queues import PgQueues

    return PgQueues(store)


def slurm_cluster() -> SlurmCluster:
    """The Slurm client tools as a cluster (issue 17), imported only when a Slurm run is met."""
    from lionrun.adapters.slurm import SlurmCluster

    return SlurmCluster()


def git_worktrees(home: str) -> Git:
    """The real git behind the worktree port (issue 28), imported only when a run has a worktree;
    every process it starts has the store at `home` hidden from it (issue 25)."""
    from lionrun.adapters.fs_store import HIDDEN
    from lionrun.adapters.git import Git

    return Git(hide=home, marker=HIDDEN)


def seen_by(store: object, acting_for: str | None) -> object:
    """`store`, or what of it an li acting for run `acting_for`'s work may see (application/acting.py)."""
    if not acting_for:
        return store
    from lionrun.application.acting import ChildrenOf

    return ChildrenOf(store, acting_for)


def spool(home: str) -> str:
    """Where a shared store's runs keep their work's files on this host until the end is recorded."""
    return f"{home}/spool"


def held_or_read(held: Settings | None) -> Settings:
    """The process's settings (config.toml read once, with the container); read here for a
    container made without the environment, as tests make one."""
    if held is not None:
        return held
    from lionrun.entrypoints.settings import load_settings

    return load_settings()


class Core(containers.DeclarativeContainer):
    config = providers.Configuration()

    home = providers.Callable(home_or_default, config.home)
    settings = providers.Singleton(held_or_read, config.settings)
    clock = providers.Singleton(SystemClock)
    plain_store = providers.Singleton(FsRunStore, home=home)
    # The fault suite's pause points wrap the real store when configured (LI_FAULT_PAUSE): a
    # provider-level choice, so production code never patches the container.
    own_store = providers.Selector(
        providers.Callable(store_kind, config.fault_pause, config.store),
        plain=plain_store,
        pausing=providers.Singleton(PausingStore, plain_store),
        postgresql=providers.Singleton(shared_store, dsn=config.store, home=home,
                                       connect_timeout=config.store_connect_timeout,
                                       statement_timeout=config.store_statement_timeout, outage=config.store_outage),
    )
    # The store as this li may use it: the whole of it, or, for an li acting for a confined run's
    # work (issue 25), that run's children only.
    store = providers.Singleton(seen_by, own_store, config.acting_for)
    # What wakes a waiting `li job wait` when a record changes: the store's companion (inotify on
    # the run folders; another store brings its own, e.g. LISTEN/NOTIFY). None: the poll alone.
    run_changes = providers.Selector(
        providers.Callable(store_kind, config.fault_pause, config.store),
        plain=providers.Singleton(local_changes, home=home),
        pausing=providers.Singleton(local_changes, home=home),
        postgresql=providers.Singleton(shared_changes, dsn=config.store, connect_timeout=config.store_connect_timeout),
    )
    # Queues with parallel limits (issue 29): kept by the store, so every host of it sees the same.
    queues = providers.Selector(
        providers.Callable(store_kind, config.fault_pause, config.store),
        plain=providers.Singleton(local_queues, home=home),
        pausing=providers.Singleton(local_queues, home=home),
        postgresql=providers.Singleton(shared_queues, store=own_store),
    )
    store_kind_now = providers.Callable(store_kind, config.fault_pause, config.store)
    prober = providers.Singleton(PsutilProber)
    signaller = providers.Singleton(GroupSignaller)
    spawner = providers.Singleton(DetachedSpawner)
    # The Slurm executor's cluster: built on first use (readers get the provider, and call it only
    # for a run that names a Slurm job).
    cluster = providers.Singleton(slurm_cluster)
    git = providers.Singleton(git_worktrees, home)
