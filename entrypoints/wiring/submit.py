"""The submit side: the provider registry, the submit service and the work a runner performs.

Each class is imported when first built: a submit loads the registry and the submit service, not
the work a runner performs (application.work, with the orchestration and its thread pool)."""

from __future__ import annotations

from lionrun.entrypoints.settings import runner_command, runner_environment
from lionrun.entrypoints.startup.di_import import containers, providers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, Literal

    from lionrun.adapters.providers import ChildGroups
    from lionrun.application.ports import (
        Clock,
        Cluster,
        Confiner,
        GitWorktrees,
        IdempotencyKeys,
        ProcessProber,
        Provider,
        RunFiles,
        RunQueues,
        RunRecords,
        Signaller,
        Spawner,
    )
    from lionrun.application.submit import SubmitService
    from lionrun.application.work import AfterEnd, WorkService


def child_groups() -> ChildGroups:
    from lionrun.adapters.providers import ChildGroups

    return ChildGroups()


def provider_registry(groups: ChildGroups) -> dict[str, Provider]:
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
    """Issue 25: the work's legs started with the store hidden from them (adapters/confinement.py)."""
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
    """Issue 42: a Claude Code leg under --permission-mode ask is given li's permission-prompt tool,
    a stdio MCP server (entrypoints/approval_mcp.py) that asks through `li` (the run's broker)."""
    options = request.agents.get(provider)
    if provider != "claude" or options is None or options.permission_mode != "ask":
        return []
    import json
    import sys

    from lionrun.domain.approval import DEFAULT_TIMEOUT, SERVER
    from lionrun.entrypoints.settings import li_command

    timeout = request.approval_timeout or DEFAULT_TIMEOUT
    server = {"type": "stdio", "command": sys.executable,
              "args": ["-P", "-m", "lionrun.entrypoints.approval_mcp", "--timeout", f"{timeout:g}", "--", *li_command()]}
    return ["--mcp-config", json.dumps({"mcpServers": {SERVER: server}})]


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
        keys=core.store,  # issue 39: every store keeps the idempotency keys of its runs
    )
    confiner = providers.Singleton(store_hider, home=core.home, groups=child_groups)
    # The runner adds the notices side's `send` as its after-end hook.
    work = providers.Factory(
        work_service, store=core.store, files=core.store, clock=core.clock, providers=provider_registry,
        stop_children=child_groups.provided.terminate_all, stop_strays=child_groups.provided.stop_strays,
        outage=config.store_outage, confiner=confiner, git=core.git.provider,
    )
