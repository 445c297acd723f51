"""The one composition root: adapters chosen and services assembled here, overridable by tests."""

from __future__ import annotations

import os

from dependency_injector import containers, providers

from adapters.clocks import SystemClock
from adapters.fs_store import FsRunStore
from adapters.processes import DetachedSpawner, GroupSignaller, PsutilProber
from application.observe import Observer


def default_home() -> str:
    """`$LI_HOME`, else `$XDG_STATE_HOME/li`, else `~/.local/state/li`."""
    if os.environ.get("LI_HOME"):
        return os.path.abspath(os.environ["LI_HOME"])
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "li")


class Container(containers.DeclarativeContainer):
    config = providers.Configuration(strict=True)

    clock = providers.Singleton(SystemClock)
    store = providers.Singleton(FsRunStore, home=config.home)
    prober = providers.Singleton(PsutilProber)
    signaller = providers.Singleton(GroupSignaller)
    spawner = providers.Singleton(DetachedSpawner)

    observer = providers.Factory(
        Observer,
        store=store,
        prober=prober,
        clock=clock,
        preparing_threshold=config.preparing_threshold,
    )


_container: Container | None = None


def get_container() -> Container:
    """The process-wide container, configured from the environment on first use."""
    global _container
    if _container is None:
        _container = Container()
        _container.config.from_dict({"home": default_home(), "preparing_threshold": 600.0})
    return _container


def set_container(container: Container | None) -> None:
    """Install a container (tests), or drop it so the next use builds a fresh one."""
    global _container
    _container = container
