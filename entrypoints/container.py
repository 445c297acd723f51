"""The one composition root: adapters chosen and services assembled here, overridable by tests."""

from __future__ import annotations

import os
import sys

from dependency_injector import containers, providers

from adapters.clocks import SystemClock
from adapters.diagnostics import SystemDiagnostics
from adapters.fs_store import FsRunStore
from adapters.notifier import CommandNotifier, timeout_from_env
from adapters.processes import DetachedSpawner, GroupSignaller, PsutilProber
from adapters.providers import ChildGroups, default_providers
from application.kill import KILL_GRACE_DEFAULT, Killer
from application.notify import Notices
from application.observe import Observer
from application.prune import Pruner
from application.reads import RunReads
from application.submit import SubmitService
from application.wait import Waiter
from application.work import WorkService


def default_home() -> str:
    """`$LI_HOME`, else `$XDG_STATE_HOME/li`, else `~/.local/state/li`."""
    if os.environ.get("LI_HOME"):
        return os.path.abspath(os.environ["LI_HOME"])
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "li")


def kill_grace_from_env() -> float:
    """Seconds between SIGTERM and SIGKILL: `$LI_KILL_GRACE` when it is a number in [0, 60], else 3."""
    try:
        grace = float(os.environ.get("LI_KILL_GRACE", ""))
    except ValueError:
        return KILL_GRACE_DEFAULT
    return grace if 0.0 <= grace <= 60.0 else KILL_GRACE_DEFAULT


def runner_command() -> list[str]:
    """The detached child: this interpreter running `entrypoints.runner` (the run id is appended)."""
    return [sys.executable, "-m", "entrypoints.runner"]


def runner_environment(home: str) -> dict[str, str]:
    """What a runner inherits: this environment, `LI_HOME`, and no cwd on sys.path (PYTHONSAFEPATH)."""
    return {**os.environ, "LI_HOME": home, "PYTHONSAFEPATH": "1"}


class Container(containers.DeclarativeContainer):
    config = providers.Configuration(strict=True)

    clock = providers.Singleton(SystemClock)
    store = providers.Singleton(FsRunStore, home=config.home)
    prober = providers.Singleton(PsutilProber)
    signaller = providers.Singleton(GroupSignaller)
    spawner = providers.Singleton(DetachedSpawner)
    notifier = providers.Singleton(CommandNotifier, timeout=providers.Callable(timeout_from_env))

    notices = providers.Factory(Notices, store=store, notifier=notifier)
    observer = providers.Factory(
        Observer,
        store=store,
        prober=prober,
        clock=clock,
        on_reaped=notices.provided.send,  # the reap winner, and only it, sends the notice (D9)
        preparing_threshold=config.preparing_threshold,
    )

    # Reads and kill (issue 4).
    reads = providers.Factory(RunReads, store=store, observer=observer)
    kill_grace = providers.Callable(kill_grace_from_env)
    killer = providers.Factory(
        Killer, store=store, observer=observer, prober=prober, signaller=signaller, clock=clock, grace=kill_grace,
    )

    # Bounded observation (issue 5): over the same Observer, so wait cannot disagree with status.
    waiter = providers.Factory(Waiter, observer=observer, clock=clock)

    # Doctor and prune (issue 9).
    diagnostics = providers.Singleton(SystemDiagnostics, home=config.home)
    pruner = providers.Factory(Pruner, store=store, observer=observer, clock=clock)

    # Submit and the work a run does (issue 3). The runner adds `notices().send` as its after-end hook.
    child_groups = providers.Singleton(ChildGroups)
    provider_registry = providers.Singleton(default_providers, groups=child_groups)
    submitter = providers.Factory(
        SubmitService, store=store, spawner=spawner, prober=prober, signaller=signaller, clock=clock,
        providers=provider_registry, runner_command=providers.Callable(runner_command),
        env=providers.Callable(runner_environment, home=config.home),
    )
    work = providers.Factory(
        WorkService, store=store, clock=clock, providers=provider_registry,
        stop_children=child_groups.provided.terminate_all,
    )


_container: Container | None = None


def get_container() -> Container:
    """The process-wide container, configured from the environment on first use."""
    global _container
    if _container is None:
        _container = Container()
        _container.config.from_dict({"home": default_home(), "preparing_threshold": 600.0})
        if os.environ.get("LI_FAULT_PAUSE"):  # the fault suite's pause points (adapters/faults.py)
            from adapters.faults import install

            install(_container)
    return _container


def set_container(container: Container | None) -> None:
    """Install a container (tests), or drop it so the next use builds a fresh one."""
    global _container
    _container = container
