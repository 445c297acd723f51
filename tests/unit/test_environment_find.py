"""lionrun.entrypoints.environment.findable answers what importlib.util.find_spec would, without importing it
(a handshake's start-up); missing_required is built on it."""

from __future__ import annotations

import importlib.util
import sys
import types

import pytest

from lionrun.entrypoints.environment import REQUIRED_MODULES, findable, missing_required


@pytest.mark.parametrize("name", [*REQUIRED_MODULES, "os", "sys", "json", "entrypoints", "domain",
                                  "no_such_module_anywhere", "_no_such_private_module"])
def test_findable_is_find_spec_is_not_none(name: str) -> None:
    assert findable(name) == (importlib.util.find_spec(name) is not None)


def test_a_none_in_sys_modules_is_not_findable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psutil", None)
    assert importlib.util.find_spec("psutil") is None
    assert findable("psutil") is False
    assert missing_required() == "psutil"


def test_an_imported_module_without_a_spec_raises_as_find_spec_does(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "filelock", types.ModuleType("filelock"))  # __spec__ is None
    with pytest.raises(ValueError):
        importlib.util.find_spec("filelock")
    with pytest.raises(ValueError):
        findable("filelock")
    assert missing_required() == "filelock"


def test_a_healthy_environment_misses_nothing() -> None:
    assert missing_required() is None
