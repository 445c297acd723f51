"""The submit side: the provider registry, the submit service and the work a runner performs."""

from __future__ import annotations

from typing import Any

from adapters.providers import ChildGroups, default_providers
from application.submit import SubmitService
from entrypoints._di import containers, providers
from entrypoints.settings import runner_command, runner_environment


def work_service(**kwargs: Any) -> Any:
    """The work a runner performs (application.work, with the orchestration and its thread pool),
    imported when first used: a runner performs it, a submit only starts one (start-up, issue 18)."""
    from application.work import WorkService

    return WorkService(**kwargs)


class SubmitSide(containers.DeclarativeContainer):
    config = providers.Configuration()
    core = providers.DependenciesContainer()

    child_groups = providers.Singleton(ChildGroups)
    provider_registry = providers.Singleton(default_providers, groups=child_groups)
    submitter = providers.Factory(
        SubmitService, store=core.store, files=core.store, spawner=core.spawner, prober=core.prober, signaller=core.signaller,
        clock=core.clock, providers=provider_registry, runner_command=providers.Callable(runner_command),
        env=providers.Callable(runner_environment, core.home), cluster=core.cluster.provider,
    )
    # The runner adds the notices side's `send` as its after-end hook.
    work = providers.Factory(
        work_service, store=core.store, files=core.store, clock=core.clock, providers=provider_registry,
        stop_children=child_groups.provided.terminate_all, outage=config.store_outage,
    )
