"""Bounded observation (D10): the waiter, over the read side's Observer so wait cannot disagree
with status. `application.wait` is imported when the waiter is first built (only `li job wait`)."""

from __future__ import annotations

from lionrun.entrypoints.startup.di_import import containers, providers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lionrun.application.observe import Observer
    from lionrun.application.ports import Clock, RunChanges
    from lionrun.application.wait import Waiter


def waiter(observer: Observer, clock: Clock, changes: RunChanges | None) -> Waiter:
    from lionrun.application.wait import Waiter

    return Waiter(observer=observer, clock=clock, changes=changes)


class Waits(containers.DeclarativeContainer):
    core = providers.DependenciesContainer()
    reads = providers.DependenciesContainer()

    waiter = providers.Factory(waiter, observer=reads.observer, clock=core.clock, changes=core.run_changes)
