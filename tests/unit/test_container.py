"""The composition root: a fresh container works on its defaults, one line swaps an adapter for
every side, and the fault suite's store is chosen by configuration."""

from __future__ import annotations

import os

import pytest
from dependency_injector import providers

from lionrun.adapters.faults import PausingStore
from lionrun.adapters.fs_store import FsRunStore
from lionrun.adapters.memory_store import MemoryRunStore
from lionrun.application.kill import KILL_GRACE_DEFAULT
from lionrun.domain.lifecycle import PREPARING_THRESHOLD_SECONDS
from lionrun.domain.notify import DEFAULT_TIMEOUT_SECONDS
from lionrun.entrypoints.container import Container
from lionrun.entrypoints.settings import from_environment


def test_a_fresh_container_works_on_the_defaults_without_any_configuration(
        tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LI_HOME", str(tmp_path))
    container = Container()
    assert container.reads.observer().preparing_threshold == PREPARING_THRESHOLD_SECONDS
    assert container.reads.killer().grace == KILL_GRACE_DEFAULT
    assert container.notices.notifier().timeout == DEFAULT_TIMEOUT_SECONDS
    assert isinstance(container.core.store(), FsRunStore)
    assert container.reads.reads().listing(5, None)["runs"] == []


def test_one_line_swaps_the_store_for_every_side_and_only_in_that_container() -> None:
    container, store = Container(), MemoryRunStore()

    container.core.store.override(providers.Object(store))  # the swap docs/architecture.md shows

    assert container.core.store() is store
    assert container.reads.observer().store is store
    assert container.reads.killer().store is store
    assert container.submit.submitter().store is store
    assert container.notices.notices().store is store
    assert container.upkeep.pruner().store is store
    other = Container()
    assert other.core.store() is not store and other.submit.submitter().store is not store


def test_the_pausing_store_is_selected_by_configuration_only_for_a_known_phase(tmp_path: object) -> None:
    for phase, kind in (("", FsRunStore), ("after_end", PausingStore), ("no_such_phase", FsRunStore)):
        container = Container()
        container.config.from_dict({"home": str(tmp_path), "fault_pause": phase})
        assert type(container.core.store()) is kind, phase


def test_the_environment_changes_only_what_it_gives_a_usable_value_for() -> None:
    settings = from_environment({"LI_HOME": "/x", "LI_KILL_GRACE": "0.5", "LI_NOTIFY_TIMEOUT": "2"})
    assert (settings["home"], settings["kill_grace"], settings["notify_timeout"]) == ("/x", 0.5, 2.0)
    for grace in ("soon", "-1", "61", "nan"):
        assert "kill_grace" not in from_environment({"LI_KILL_GRACE": grace}), grace
    for timeout in ("soon", "0", "-1", "nan", "inf"):
        assert "notify_timeout" not in from_environment({"LI_NOTIFY_TIMEOUT": timeout}), timeout
    assert from_environment({"LI_FAULT_PAUSE": "before_work"})["fault_pause"] == "before_work"
    assert "fault_pause" not in from_environment({})


def test_a_container_reads_the_config_toml_of_its_own_home_not_the_environments(
        tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    own, other = (os.path.join(str(tmp_path), name) for name in ("own", "other"))
    for home, executor in ((own, "slurm"), (other, "local")):
        os.makedirs(home, mode=0o700)
        with open(os.path.join(home, "config.toml"), "w", encoding="utf-8") as handle:
            handle.write(f'executor = "{executor}"\n')
    monkeypatch.setenv("LI_HOME", other)
    container = Container()
    container.config.from_dict({"home": own})
    settings = container.core.settings()
    assert settings.home == own and settings.file.path == os.path.join(own, "config.toml")
    assert settings.entries.executor == "slurm"
