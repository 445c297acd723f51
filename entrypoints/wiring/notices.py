"""The notices side: the terminal notice (D9), sent by the runner or handed by a reap winner to a
detached sender so a reader never blocks on the command."""

from __future__ import annotations

import os

from adapters.notifier import CommandNotifier
from application.notify import DetachedNotices, Notices
from entrypoints._di import containers, providers
from entrypoints.settings import notice_command, runner_environment


class NoticesSide(containers.DeclarativeContainer):
    config = providers.Configuration()
    core = providers.DependenciesContainer()

    notifier = providers.Singleton(CommandNotifier, timeout=config.notify_timeout)
    notices = providers.Factory(Notices, store=core.store, notifier=notifier)
    # The reap winner claims the notice and hands its delivery to a detached sender (D9: the
    # winner, and only it, attempts the delivery).
    reap_notices = providers.Factory(
        DetachedNotices, notices=notices, spawner=core.spawner, command=providers.Callable(notice_command),
        env=providers.Callable(runner_environment, core.home), cwd="/", log_path=os.devnull,
    )
