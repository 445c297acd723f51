"""Worlds: a container over in-memory fakes or over the real filesystem store, same scenarios on both."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dependency_injector import providers

from lionrun.adapters.clocks import FakeClock
from lionrun.adapters.fakes import (
    RecordingNotifier,
    RecordingSignaller,
    ScriptedProber,
    ScriptedSpawner,
)
from lionrun.adapters.fs_store import FsRunStore
from lionrun.adapters.memory_store import MemoryRunStore
from lionrun.entrypoints.container import Container


@dataclass
class World:
    """A container whose clock, prober, signaller, spawner and notifier are fakes; the store varies."""

    kind: str
    container: Container
    clock: FakeClock
    prober: ScriptedProber
    store: Any
    notifier: RecordingNotifier
    signaller: RecordingSignaller
    spawner: ScriptedSpawner


def make_world(kind: str, tmp_path: str) -> World:
    clock, prober = FakeClock(), ScriptedProber()
    store: Any = MemoryRunStore() if kind == "memory" else FsRunStore(f"{tmp_path}/li-home")
    notifier, signaller, spawner = RecordingNotifier(), RecordingSignaller(prober), ScriptedSpawner(prober)
    container = Container()
    container.config.from_dict({"home": f"{tmp_path}/li-home"})
    container.core.clock.override(providers.Object(clock))
    container.core.prober.override(providers.Object(prober))
    container.core.store.override(providers.Object(store))
    container.core.signaller.override(providers.Object(signaller))
    container.core.spawner.override(providers.Object(spawner))
    container.core.run_changes.override(providers.Object(None))  # waits sleep on the fake clock
    container.submit.confiner.override(providers.Object(None))  # the work is no real process here
    container.notices.notifier.override(providers.Object(notifier))
    # In a world the reap winner delivers in-process (no detached sender to start).
    container.notices.reap_notices.override(container.notices.notices)
    return World(kind, container, clock, prober, store, notifier, signaller, spawner)


def on_both_worlds_unless_cli(namespace: dict[str, Any]) -> None:
    """Put every collected scenario of a features module on the `world` fixture, except `@cli` ones.

    `@cli` scenarios drive the real `li` once; the rest run on the memory and the fs worlds.
    """
    import pytest

    for name, test in list(namespace.items()):
        marks = {mark.name for mark in getattr(test, "pytestmark", [])}
        if name.startswith("test_") and "cli" not in marks:
            pytest.mark.usefixtures("world")(test)
