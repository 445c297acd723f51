"""Bounded observation (D10): the waiter, over the read side's Observer so wait cannot disagree
with status. Its own side so `li job status` and `li job list` do not load it."""

from __future__ import annotations

from application.wait import Waiter
from entrypoints._di import containers, providers


class Waits(containers.DeclarativeContainer):
    core = providers.DependenciesContainer()
    reads = providers.DependenciesContainer()

    waiter = providers.Factory(Waiter, observer=reads.observer, clock=core.clock, changes=core.run_changes)
