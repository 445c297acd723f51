"""Doctor and prune: what checks the installation and what removes ended runs."""

from __future__ import annotations

from adapters.diagnostics import SystemDiagnostics
from application.prune import Pruner
from entrypoints._di import containers, providers


class Upkeep(containers.DeclarativeContainer):
    core = providers.DependenciesContainer()
    reads = providers.DependenciesContainer()

    diagnostics = providers.Singleton(SystemDiagnostics, home=core.home)
    pruner = providers.Factory(Pruner, store=core.store, observer=reads.observer, clock=core.clock)
