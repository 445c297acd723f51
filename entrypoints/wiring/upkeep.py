"""Doctor and prune: what checks the installation and what removes ended runs, each imported
when first built (only `li doctor` and `li job prune`)."""

from __future__ import annotations

from entrypoints._di import containers, providers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from adapters.diagnostics import SystemDiagnostics
    from application.observe import Observer
    from application.ports import Clock, RunRecords
    from application.prune import Pruner


def diagnostics(home: str) -> SystemDiagnostics:
    from adapters.diagnostics import SystemDiagnostics

    return SystemDiagnostics(home=home)


def pruner(store: RunRecords, observer: Observer, clock: Clock) -> Pruner:
    from application.prune import Pruner

    return Pruner(store=store, observer=observer, clock=clock)


class Upkeep(containers.DeclarativeContainer):
    core = providers.DependenciesContainer()
    reads = providers.DependenciesContainer()

    diagnostics = providers.Singleton(diagnostics, home=core.home)
    pruner = providers.Factory(pruner, store=core.store, observer=reads.observer, clock=core.clock)
