"""The notices side: the terminal notice (D9), sent by the runner or handed by a reap winner to a
detached sender so a reader never blocks on the command. Its classes are imported when first
built (a runner's end, a reap that publishes)."""

from __future__ import annotations

import os

from lionrun.entrypoints.settings import notice_command, runner_environment
from lionrun.entrypoints.startup.di_import import containers, providers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from lionrun.adapters.notifier import CommandNotifier
    from lionrun.application.notify import DetachedNotices, Notices
    from lionrun.application.ports import Notifier, RunRecords, Spawner


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
