"""The one composition root: every service of `li` built by one dependency-injector container.

Read top to bottom: the builders (typed functions that import a service's module when first
called, so `li job status` loads the read side's classes and nothing else), then one container per
side (dependency-injector's multiple-containers layout) — `core` (settings, clock, store,
processes), `reads` (observer, reads, killer, follower), `waits` (waiter), `submit` (providers,
submitter, work), `notices` (terminal notices), `upkeep` (doctor, prune, worktree reviews) — then
their composition, configured from the environment, and `get_container()`, where every caller
asks for a provider: `get_container().reads.reads()`, `get_container().core.store()`.

What a reap does once published is the application's policy (application/reap_policy.py); this
module only hands it its services. An outside test swaps one adapter in one line, e.g.
`container.core.store.override(providers.Object(MemoryRunStore()))`.
"""

from __future__ import annotations

import os

from lionrun.adapters.clocks import SystemClock
from lionrun.adapters.faults import PHASES, PausingStore
from lionrun.adapters.fs_store import FsRunStore
from lionrun.adapters.processes import DetachedSpawner, GroupSignaller, PsutilProber
from lionrun.application.kill import Killer
from lionrun.application.observe import Observer
from lionrun.application.reads import RunReads
from lionrun.application.reap_policy import reap_hook, restart_hook
from lionrun.entrypoints.settings import (
    DEFAULTS,
    from_environment,
    home_or_default,
    is_shared_store,
    notice_command,
    runner_command,
    runner_environment,
)
from lionrun.entrypoints.startup.di_import import containers, providers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, Literal

    from lionrun.adapters.diagnostics import SystemDiagnostics
    from lionrun.adapters.fs_changes import FsRunChanges
    from lionrun.adapters.fs_queues import FsQueues
    from lionrun.adapters.git import Git
    from lionrun.adapters.notifier import CommandNotifier
    from lionrun.adapters.pg_queues import PgQueues
    from lionrun.adapters.pg_store import PgRunChanges, PgRunStore
    from lionrun.adapters.providers import ChildGroups
    from lionrun.adapters.slurm import SlurmCluster
    from lionrun.application.follow import Follower
    from lionrun.application.notify import DetachedNotices, Notices
    from lionrun.application.ports import (
        Clock,
        Cluster,
        Confiner,
        GitWorktrees,
        IdempotencyKeys,
        Notifier,
        ProcessProber,
        Provider,
        RunChanges,
        RunFiles,
        RunQueues,
        RunRecords,
        Signaller,
        Spawner,
    )
    from lionrun.application.prune import Pruner
    from lionrun.application.submit import SubmitService
    from lionrun.application.wait import Waiter
    from lionrun.application.work import AfterEnd, WorkService
    from lionrun.application.worktrees import WorktreeReviews
    from lionrun.domain.config import Settings
    from lionrun.domain.run import Run

    Store = FsRunStore | PausingStore | PgRunStore


# ---- core: settings, clock, the run store and the process adapters every side shares

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
    """Queues on the filesystem store, imported when first used: a submit and a queued
    runner ask them; no read does."""
    from lionrun.adapters.fs_queues import FsQueues

    return FsQueues(home)


def shared_queues(store: PgRunStore) -> PgQueues:
    """Queues on the PostgreSQL store, in its tables; its session holds this process's places
    and slots (advisory locks), imported only when configured."""
    from lionrun.adapters.pg_queues import PgQueues

    return PgQueues(store)


def slurm_cluster() -> SlurmCluster:
    """The Slurm client tools as a cluster, imported only when a Slurm run is met."""
    from lionrun.adapters.slurm import SlurmCluster

    return SlurmCluster()


def git_worktrees(home: str) -> Git:
    """The real git behind the worktree port, imported only when a run has a worktree;
    every process it starts has the store at `home` hidden from it."""
    from lionrun.adapters.fs_store import HIDDEN
    from lionrun.adapters.git import Git

    return Git(hide=home, marker=HIDDEN)


def seen_by(store: object, acting_for: str | None) -> object:
    """`store`, or what of it an li acting for run `acting_for`'s work may see (application/acting.py)."""
    if not acting_for:
        return store
    from lionrun.application.acting import ChildrenOf

    return ChildrenOf(store, acting_for)


def held_or_read(held: Settings | None, home: str) -> Settings:
    """The process's settings (config.toml read once, with the container); read here, from the
    container's own home, for a container made without the environment, as tests make one."""
    if held is not None:
        return held
    from lionrun.entrypoints.settings import load_settings

    return load_settings(home=home)


def spool(home: str) -> str:
    """Where a shared store's runs keep their work's files on this host until the end is recorded."""
    return f"{home}/spool"


# ---- reads: one Observer under status, output, list, wait and kill (and the reap it may do)

def follow_loop(files: RunFiles, observer: Observer, clock: Clock, poll_seconds: float | None = None) -> Follower:
    """The follow loop (application.follow), imported when first used: `li agent` in the
    foreground and `li job output --follow` follow, no other read does."""
    from lionrun.application.follow import Follower

    if poll_seconds is None:
        return Follower(files=files, observer=observer, clock=clock)
    return Follower(files=files, observer=observer, clock=clock, poll_seconds=poll_seconds)


# ---- waits: bounded observation (D10), over the read side's Observer

def waiter(observer: Observer, clock: Clock, changes: RunChanges | None) -> Waiter:
    from lionrun.application.wait import Waiter

    return Waiter(observer=observer, clock=clock, changes=changes)


# ---- submit: the provider registry, the submit service and the work a runner performs

def child_groups() -> ChildGroups:
    from lionrun.adapters.providers import ChildGroups

    return ChildGroups()


def provider_registry(groups: ChildGroups) -> Mapping[str, Provider]:
    from lionrun.adapters.providers import default_providers

    return default_providers(groups)


def submitter(store: RunRecords, files: RunFiles, spawner: Spawner, prober: ProcessProber, signaller: Signaller,
              clock: Clock, providers: Mapping[str, Provider], runner_command: Sequence[str],
              env: Mapping[str, str], cluster: Callable[[], Cluster] | None = None,
              queues: Callable[[], RunQueues | None] | None = None,
              keys: IdempotencyKeys | None = None, home: str | None = None) -> SubmitService:
    import os

    from lionrun.application.submit import SubmitService

    return SubmitService(store=store, files=files, spawner=spawner, prober=prober, signaller=signaller, clock=clock,
                         providers=providers, runner_command=runner_command, env=env, cluster=cluster,
                         queues=queues, keys=keys, home=home, real_path=os.path.realpath)


def store_hider(home: str, groups: ChildGroups) -> Confiner:
    """The work's legs started with the store hidden from them (adapters/confinement.py)."""
    from lionrun.adapters.confinement import StoreHider
    from lionrun.adapters.fs_store import HIDDEN
    from lionrun.entrypoints.settings import li_command

    return StoreHider(home, groups, HIDDEN, li_command())


def work_service(store: RunRecords, files: RunFiles, clock: Clock, providers: Mapping[str, Provider],
                 stop_children: Callable[[], None], outage: float, after_end: AfterEnd | None = None,
                 kill_watch: float | None | Literal["default"] = "default",
                 stop_strays: Callable[[Callable[[str], None]], None] | None = None,
                 confiner: Confiner | None = None,
                 git: Callable[[], GitWorktrees] | None = None) -> WorkService:
    """`kill_watch` None: no kill watch; "default": the work's own period."""
    from lionrun.application.work import KILL_WATCH_SECONDS, WorkService

    return WorkService(store=store, files=files, clock=clock, providers=providers, after_end=after_end,
                       stop_children=stop_children, stop_strays=stop_strays, outage=outage, confiner=confiner, git=git,
                       kill_watch=KILL_WATCH_SECONDS if kill_watch == "default" else kill_watch,
                       leg_arguments=ask_arguments)


def ask_arguments(request: Any, provider: str) -> list[str]:
    """An agent leg under --permission-mode ask is handed li's permission-prompt tool, a stdio MCP
    server (entrypoints/approval_mcp.py) that asks through `li` (the run's broker), in the argv its
    CLI's module names (`AgentCli.ask_arguments`)."""
    options = request.agents.get(provider)
    if options is None or options.permission_mode != "ask":
        return []
    import sys

    from lionrun.domain.agents import agent, is_agent
    from lionrun.domain.approval import DEFAULT_TIMEOUT, SERVER
    from lionrun.entrypoints.settings import li_command

    if not is_agent(provider) or not agent(provider).asks:
        return []
    timeout = request.approval_timeout or DEFAULT_TIMEOUT
    server = {"type": "stdio", "command": sys.executable,
              "args": ["-P", "-m", "lionrun.entrypoints.approval_mcp", "--timeout", f"{timeout:g}", "--", *li_command()]}
    return agent(provider).ask_arguments({SERVER: server})


# ---- notices: the terminal notice (D9), sent by the runner or handed by a reap winner to a detached sender

def notifier(timeout: float) -> CommandNotifier:
    from lionrun.adapters.notifier import CommandNotifier

    return CommandNotifier(timeout=timeout)


def notices(store: RunRecords, notifier: Notifier) -> Notices:
    from lionrun.application.notify import Notices

    return Notices(store=store, notifier=notifier)


def detached_notices(notices: Notices, spawner: Spawner, command: Sequence[str], env: Mapping[str, str],
                     cwd: str, log_path: str) -> DetachedNotices:
    from lionrun.application.notify import DetachedNotices

    return DetachedNotices(notices=notices, spawner=spawner, command=command, env=env, cwd=cwd, log_path=log_path)


# ---- upkeep: doctor, prune and rm, worktree reviews

def diagnostics(home: str, settings: Settings) -> SystemDiagnostics:
    from lionrun.adapters.diagnostics import SystemDiagnostics

    return SystemDiagnostics(home=home, config=settings.file)  # config.toml as the process read it


def pruner(store: Store, observer: Observer, clock: Clock,
           git: Callable[[], GitWorktrees] | None = None) -> Pruner:
    """Prune and rm; a run's worktree is removed with it through git, built on first use."""
    from lionrun.application.prune import Pruner

    if git is None:
        return Pruner(store=store, observer=observer, clock=clock)
    built_git = git

    def worktrees(run: Run, branches: bool) -> str | None:
        from lionrun.application.worktrees import RunWorktrees

        return RunWorktrees(built_git(), store, store).remove(run, branches)

    return Pruner(store=store, observer=observer, clock=clock, worktrees=worktrees)


def worktree_reviews(store: Store, git: Callable[[], GitWorktrees], reads: RunReads) -> WorktreeReviews:
    """`li job diff` and `li job apply`, imported when first used; a run is observed
    (not_found, unusable, terminal) as every read observes it."""
    from lionrun.application.worktrees import WorktreeReviews

    def observe(run_id: str) -> tuple[Run, bool]:
        observed = reads.observe(run_id)
        return observed.run, observed.derivation.terminal

    return WorktreeReviews(store, store, git, observe)


# ---- the sides' containers


class Core(containers.DeclarativeContainer):
    config = providers.Configuration()

    home = providers.Callable(home_or_default, config.home)
    settings = providers.Singleton(held_or_read, config.settings, home)
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
    # work, that run's children only.
    store = providers.Singleton(seen_by, own_store, config.acting_for)
    # What wakes a waiting `li job wait` when a record changes: the store's companion (inotify on
    # the run folders; another store brings its own, e.g. LISTEN/NOTIFY). None: the poll alone.
    run_changes = providers.Selector(
        providers.Callable(store_kind, config.fault_pause, config.store),
        plain=providers.Singleton(local_changes, home=home),
        pausing=providers.Singleton(local_changes, home=home),
        postgresql=providers.Singleton(shared_changes, dsn=config.store, connect_timeout=config.store_connect_timeout),
    )
    # Queues with parallel limits: kept by the store, so every host of it sees the same.
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


class Reads(containers.DeclarativeContainer):
    config = providers.Configuration()
    core = providers.DependenciesContainer()
    # What a reap winner calls (D9); the top container hands in the notices side, built on first use.
    on_reaped: providers.Dependency[Callable[[Run], None] | None] = providers.Dependency(default=None)
    # What starts a new runner for a waiting run whose runner is gone (built on first use).
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


class Waits(containers.DeclarativeContainer):
    core = providers.DependenciesContainer()
    reads = providers.DependenciesContainer()

    waiter = providers.Factory(waiter, observer=reads.observer, clock=core.clock, changes=core.run_changes)


class SubmitSide(containers.DeclarativeContainer):
    config = providers.Configuration()
    core = providers.DependenciesContainer()

    child_groups = providers.Singleton(child_groups)
    provider_registry = providers.Singleton(provider_registry, groups=child_groups)
    submitter = providers.Factory(
        submitter, store=core.store, files=core.store, spawner=core.spawner, prober=core.prober,
        signaller=core.signaller, clock=core.clock, providers=provider_registry,
        runner_command=providers.Callable(runner_command), env=providers.Callable(runner_environment, core.home),
        cluster=core.cluster.provider, queues=core.queues.provider, home=core.home,
        keys=core.store,  # every store keeps the idempotency keys of its runs
    )
    confiner = providers.Singleton(store_hider, home=core.home, groups=child_groups)
    # The runner adds the notices side's `send` as its after-end hook.
    work = providers.Factory(
        work_service, store=core.store, files=core.store, clock=core.clock, providers=provider_registry,
        stop_children=child_groups.provided.terminate_all, stop_strays=child_groups.provided.stop_strays,
        outage=config.store_outage, confiner=confiner, git=core.git.provider,
    )


class NoticesSide(containers.DeclarativeContainer):
    config = providers.Configuration()
    core = providers.DependenciesContainer()

    notifier = providers.Singleton(notifier, timeout=config.notify_timeout)
    notices = providers.Factory(notices, store=core.store, notifier=notifier)
    # The reap winner claims the notice and hands its delivery to a detached sender (D9: the
    # winner, and only it, attempts the delivery).
    reap_notices = providers.Factory(
        detached_notices, notices=notices, spawner=core.spawner, command=providers.Callable(notice_command),
        env=providers.Callable(runner_environment, core.home), cwd="/", log_path=os.devnull,
    )


class Upkeep(containers.DeclarativeContainer):
    core = providers.DependenciesContainer()
    reads = providers.DependenciesContainer()

    diagnostics = providers.Singleton(diagnostics, home=core.home, settings=core.settings)
    pruner = providers.Factory(pruner, store=core.store, observer=reads.observer, clock=core.clock,
                               git=core.git.provider)
    reviews = providers.Factory(worktree_reviews, store=core.store, git=core.git.provider, reads=reads.reads)


# ---- the composition, and the process's container


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
            on_reaped=providers.Callable(reap_hook, notices.reap_notices.provider, core.store, core.git.provider),
            restart=providers.Callable(restart_hook, submit.submitter.provider, core.store, core.clock),
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


def read_settings_again() -> None:
    """config.toml read again, for a process that lives on (`li serve`) before an action that
    submits: what a person changed or mended in the file since the process started is what the
    next run gets, as a fresh `li` call would. The store stays the one the process opened."""
    from lionrun.entrypoints.settings import load_settings

    built = get_container()
    built.config.settings.from_value(load_settings(home=built.core.home()))
    built.core.settings.reset()


def set_container(container: Any) -> None:
    """Install a container (tests), or drop it so the next use builds a fresh one."""
    global _container
    _container = container


def sweep_spool() -> None:
    """After a li call on a shared store: move in what a run left in this host's spool once its
    runner was gone. Costs one look at the spool folder when it is empty (the
    usual case); never changes the answer given, never raises."""
    if _container is None:
        return  # this call built no container (`li handshake`, `--help`): it touched no store
    try:
        built = get_container()
        if built.core.store_kind_now() != "postgresql":
            return
        folder = os.path.join(str(built.core.home()), "spool")
        if not os.path.isdir(folder) or not os.listdir(folder):
            return
        from lionrun.application.spool import SpoolSweep

        store = built.core.own_store()
        SpoolSweep(store, store, built.reads.observer(), built.core.clock()).sweep()
    except Exception:  # noqa: BLE001 - the next call tries again; this one has answered already
        return
