"""The one composition root: adapters chosen and services assembled here, overridable by tests."""

from __future__ import annotations

import os
import sys
from importlib import import_module
from typing import Any

from entrypoints._di import containers, providers


def lazy(path: str) -> Any:
    """A constructor named by dotted path, imported only when its provider is first used.

    `li job status` needs the store, the prober and the observer, not the submit machinery:
    keeping every adapter import out of this module's import is what keeps polling cheap.
    """
    module, name = path.rsplit(".", 1)

    def construct(*args: Any, **kwargs: Any) -> Any:
        return getattr(import_module(module), name)(*args, **kwargs)

    construct.__qualname__ = construct.__name__ = name
    return construct


def on_first_use(factory: Any) -> Any:
    """The reap hook: the notice machinery is built only when a reap actually publishes.

    Every status, list and wait composes an Observer; almost none of them reap.
    """

    def send(run: Any) -> None:
        factory().send(run)

    return send


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
        grace = -1.0
    if 0.0 <= grace <= 60.0:
        return grace
    from application.kill import KILL_GRACE_DEFAULT

    return KILL_GRACE_DEFAULT


def runner_command() -> list[str]:
    """The detached child: this interpreter running `entrypoints.runner` (the run id is appended)."""
    return [sys.executable, "-m", "entrypoints.runner"]


def notice_command() -> list[str]:
    """The detached notice sender (the run id is appended)."""
    return [sys.executable, "-m", "entrypoints.notice"]


def runner_environment(home: str) -> dict[str, str]:
    """What a runner inherits: this environment, `LI_HOME`, and no cwd on sys.path (PYTHONSAFEPATH)."""
    return {**os.environ, "LI_HOME": home, "PYTHONSAFEPATH": "1"}


def notify_timeout() -> float:
    from adapters.notifier import timeout_from_env

    return float(timeout_from_env())


class Container(containers.DeclarativeContainer):
    config = providers.Configuration(strict=True)

    clock = providers.Singleton(lazy("adapters.clocks.SystemClock"))
    store = providers.Singleton(lazy("adapters.fs_store.FsRunStore"), home=config.home)
    prober = providers.Singleton(lazy("adapters.processes.PsutilProber"))
    signaller = providers.Singleton(lazy("adapters.processes.GroupSignaller"))
    spawner = providers.Singleton(lazy("adapters.processes.DetachedSpawner"))
    notifier = providers.Singleton(lazy("adapters.notifier.CommandNotifier"), timeout=providers.Callable(notify_timeout))

    notices = providers.Factory(lazy("application.notify.Notices"), store=store, notifier=notifier)
    # The reap winner claims the notice and hands its delivery to a detached sender, so a reader
    # never blocks on the command (D9: the winner, and only it, attempts the delivery).
    reap_notices = providers.Factory(
        lazy("application.notify.DetachedNotices"), notices=notices, spawner=spawner,
        command=providers.Callable(notice_command), env=providers.Callable(runner_environment, home=config.home),
        cwd="/", log_path=os.devnull,
    )
    observer = providers.Factory(
        lazy("application.observe.Observer"),
        store=store,
        prober=prober,
        clock=clock,
        on_reaped=providers.Callable(on_first_use, reap_notices.provider),  # only the reap winner (D9)
        preparing_threshold=config.preparing_threshold,
    )

    # Reads and kill (issue 4).
    reads = providers.Factory(lazy("application.reads.RunReads"), store=store, observer=observer)
    kill_grace = providers.Callable(kill_grace_from_env)
    killer = providers.Factory(
        lazy("application.kill.Killer"), store=store, observer=observer, signaller=signaller, clock=clock, grace=kill_grace,
    )

    # Bounded observation (issue 5): over the same Observer, so wait cannot disagree with status.
    waiter = providers.Factory(lazy("application.wait.Waiter"), observer=observer, clock=clock)

    # Doctor and prune (issue 9).
    diagnostics = providers.Singleton(lazy("adapters.diagnostics.SystemDiagnostics"), home=config.home)
    pruner = providers.Factory(lazy("application.prune.Pruner"), store=store, observer=observer, clock=clock)

    # Submit and the work a run does (issue 3). The runner adds `notices().send` as its after-end hook.
    child_groups = providers.Singleton(lazy("adapters.providers.ChildGroups"))
    provider_registry = providers.Singleton(lazy("adapters.providers.default_providers"), groups=child_groups)
    submitter = providers.Factory(
        lazy("application.submit.SubmitService"), store=store, spawner=spawner, prober=prober, signaller=signaller, clock=clock,
        providers=provider_registry, runner_command=providers.Callable(runner_command),
        env=providers.Callable(runner_environment, home=config.home),
    )
    work = providers.Factory(
        lazy("application.work.WorkService"), store=store, clock=clock, providers=provider_registry,
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
